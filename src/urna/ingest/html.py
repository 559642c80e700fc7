"""HTML (derived): block-level text by lxml's HTML parser; scripts, styles and comments dropped.

The bytes are decoded as the page says: a byte-order mark, else a ``<meta charset>`` (or
``http-equiv`` content type) in its first 4 KiB, else UTF-8, else windows-1252 (what
browsers assume; the labels latin-1, iso-8859-1 and ascii mean windows-1252 too, as the
WHATWG Encoding standard says). Tables become one block of rows (cells joined by `` | ``);
a table nested in a cell ends the outer table's block where it starts, becomes its own
block, and the outer table goes on in a new block after it, so every cell keeps its place
in document order. Elements nested deeper than 2048 levels (libxml2's limit) are left out.

A page is read as its reader sees it (extractor version 2): the main content only, the first
``<main>``, else the first ``[role=main]``, else the one ``<article>``; a page without one is
its body less the page's navigation, banner, footer, sidebars and search (``<nav>``,
``<aside>``, a ``<header>`` or ``<footer>`` outside any article or section, and the ARIA
roles that mean the same). Inside the content, permalink anchors (a link to ``#...`` whose
text is only a glyph: ``¶``, ``#``, ``§``, ``🔗``), buttons and forms are left out, so a
heading is its own text. A page whose content is mostly links to other pages (a generated
index, a table of contents) is refused, and the build says so. Hand-written on lxml rather
than a boilerplate library (trafilatura, readability): those score text density, and their
judgement moves between releases, while a citation needs the same text from the same page
for as long as its file lives; the markup that generators write (Sphinx, MkDocs, Node's,
Docusaurus, rustdoc) says what is content.
Version 1 (whole body) stays readable: a file built by it records no version and verifies
with it.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from typing import Any

from urna.errors import missing_extra
from urna.ingest.document import Assembler, Document

VERSION = 2  # what the extractor reads of a page (recorded in the files built from it)
_SKIP = {"script", "style", "noscript", "template", "head", "svg", "title"}
_SKIP_IN_CONTENT = {"button", "form", "nav", "select", "textarea"}
_CHROME_ROLES = {"navigation", "banner", "contentinfo", "search", "complementary"}
_SECTIONS = {"article", "section", "main"}
_GLYPHS = {"", "¶", "#", "§", "🔗", "🔗\ufe0e", "🔗\ufe0f", "⚓", "⚓\ufe0f", "🔖"}
_BLOCKS = {
    "p": "paragraph",
    "li": "list_item",
    "pre": "code",
    "blockquote": "paragraph",
    "dd": "paragraph",
    "dt": "paragraph",
    "figcaption": "paragraph",
    "caption": "paragraph",
}
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BREAKS = {
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "br",
    "hr",
    "ul",
    "ol",
    "body",
    "nav",
    "aside",
    "form",
}
_SPACE = re.compile(r"\s+")
_META_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
_WINDOWS_1252_LABELS = {"latin-1", "iso8859-1", "ascii", "cp1252"}
PRESCAN = 4096
LINK_PAGE_LINKS, LINK_PAGE_SHARE = 50, 0.7


def decode_html(data: bytes) -> str:
    """The page's text, decoded by its byte-order mark, declared charset, or UTF-8."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, "replace")
    declared = _META_CHARSET.search(data[:PRESCAN])
    if declared is not None:
        try:
            codec = codecs.lookup(declared.group(1).decode("ascii")).name
        except LookupError:
            codec = ""
        if codec in _WINDOWS_1252_LABELS:
            codec = "cp1252"
        elif codec.startswith("utf-16"):  # a page read as bytes cannot be UTF-16 by <meta>
            codec = "utf-8"
        if codec:
            return data.decode(codec, "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


@dataclass
class _Table:
    rows: list[str] = field(default_factory=list)
    row: list[str] | None = None
    cell: list[str] | None = None


class _Extractor:
    """Walks the parsed tree in document order (no recursion: any depth) into blocks."""

    def __init__(self) -> None:
        self.out = Assembler()
        self.buf: list[str] = []
        self.kind = "paragraph"
        self.level = 0
        self.pre = 0
        self.tables: list[_Table] = []

    def flush(self) -> None:
        raw = "".join(self.buf)
        self.buf = []
        text = raw.strip("\n") if self.pre else _SPACE.sub(" ", raw).strip()
        if text:
            self.out.add(
                self.kind, text, level=self.level, title=text if self.kind == "heading" else ""
            )
        self.kind, self.level = "paragraph", 0

    def text(self, data: str | None) -> None:
        if not data:
            return
        table = self.tables[-1] if self.tables else None
        if table is None:
            self.buf.append(data)
        elif table.cell is not None:
            table.cell.append(data)
        elif data.strip():  # loose text inside a table, outside any cell: a cell of its own
            (table.row if table.row is not None else table.rows).append(
                _SPACE.sub(" ", data).strip()
            )

    def emit_table(self, table: _Table) -> None:
        self.out.add("table", "\n".join(table.rows))
        table.rows = []

    def start(self, tag: str) -> None:
        table = self.tables[-1] if self.tables else None
        if tag == "table":
            self.flush()
            if table is not None:
                self.emit_table(_partial(table))
            self.tables.append(_Table())
        elif table is not None and tag == "tr":
            table.row = []
        elif table is not None and tag in ("td", "th"):
            table.cell = []
        elif tag in _HEADINGS:
            self.flush()
            self.kind, self.level = "heading", _HEADINGS[tag]
        elif tag in _BLOCKS:
            self.flush()
            self.kind = _BLOCKS[tag]
            self.pre += tag == "pre"
        elif tag in _BREAKS:
            self.flush()

    def end(self, tag: str) -> None:
        table = self.tables[-1] if self.tables else None
        if table is not None and tag in ("td", "th") and table.cell is not None:
            if table.row is None:
                table.row = []
            table.row.append(_SPACE.sub(" ", "".join(table.cell)).strip())
            table.cell = None
        elif table is not None and tag == "tr" and table.row is not None:
            if any(table.row):
                table.rows.append(" | ".join(table.row))
            table.row = None
        elif table is not None and tag == "table":
            self.tables.pop()
            _close_row(table)
            self.emit_table(table)
        elif tag in _HEADINGS or tag in _BLOCKS or tag in _BREAKS:
            self.flush()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)


def _partial(table: _Table) -> _Table:
    """The outer table's rows so far, with the row and cell in progress, as one block; the
    table itself goes on with what comes after the nested table."""
    done = _Table(list(table.rows))
    cells = list(table.row or [])
    if table.cell is not None:
        cells.append(_SPACE.sub(" ", "".join(table.cell)).strip())
        table.cell = []
    if any(cells):
        done.rows.append(" | ".join(c for c in cells if c))
    table.rows = []
    table.row = [] if table.row is not None else None
    return done


def _close_row(table: _Table) -> None:
    if table.cell is not None:
        if table.row is None:
            table.row = []
        table.row.append(_SPACE.sub(" ", "".join(table.cell)).strip())
        table.cell = None
    if table.row is not None and any(table.row):
        table.rows.append(" | ".join(table.row))
    table.row = None


def _parse(text: str) -> Any:
    try:
        from lxml import etree
        from lxml import html as lxml_html
    except ImportError:
        raise missing_extra("lxml", "") from None
    parser = etree.HTMLParser(
        encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True
    )
    try:
        return lxml_html.document_fromstring(text.encode("utf-8"), parser=parser)
    except etree.ParserError:  # an empty document
        return None


def _first(root: Any, path: str) -> Any:
    found = root.xpath(path)
    return found[0] if found else None


def _left_out(element: Any, main: Any) -> bool:
    """Whether an element inside the content is chrome: navigation, a search box, a sidebar,
    a page-level header or footer, a button, a form, a permalink anchor."""
    tag = element.tag if isinstance(element.tag, str) else ""
    if not tag:
        return False
    if tag in _SKIP_IN_CONTENT or tag == "aside":
        return True
    if (element.get("role") or "").strip().lower() in _CHROME_ROLES:
        return True
    if tag in ("header", "footer"):  # the page's, not an article's or a section's
        return main.tag not in _SECTIONS and not any(
            a.tag in _SECTIONS for a in element.iterancestors() if a is not main
        )
    if tag == "a" and (element.get("href") or "").startswith("#") and len(element) <= 1:
        return "".join(element.itertext()).strip() in _GLYPHS
    return False


def content_of(root: Any) -> tuple[Any, set[Any]]:
    """The element that holds the page's main content, and the elements in it to leave out."""
    main = _first(root, "//main[not(@hidden)]")
    if main is None:  # (an element's truth is whether it has children: never ``or``)
        main = _first(root, "//*[@role='main']")
    if main is None:
        articles = root.xpath("//article")
        main = articles[0] if len(articles) == 1 else _first(root, "//body")
        if main is None:
            main = root
    skip = {e for e in main.iter() if e is not main and _left_out(e, main)}
    return main, skip


def refuse_link_pages(main: Any) -> None:
    """Refuse a page whose content is a list of links to other pages (a generated index, a
    table of contents): its text is the other pages' titles, and every answer would come
    twice. At least ``LINK_PAGE_LINKS`` such links holding ``LINK_PAGE_SHARE`` of the text."""
    links = main.xpath(".//a[@href and not(starts-with(@href, '#'))]")
    if len(links) < LINK_PAGE_LINKS:
        return
    text = sum(len(t.strip()) for t in main.itertext())
    linked = sum(len(t.strip()) for a in links for t in a.itertext())
    if text and linked >= LINK_PAGE_SHARE * text:
        raise ValueError(
            f"a page of links ({len(links)} links, {linked / text:.0%} of its text): a "
            "generated index or a table of contents"
        )


def load_html(data: bytes, source_uri: str, version: int = VERSION) -> Document:
    """The page's blocks: its main content (``version`` 2), or its whole body (1)."""
    extractor = _Extractor()
    root = _parse(decode_html(data))
    if root is not None:
        skip: set[Any] = set()
        if version >= 2:
            root, skip = content_of(root)
            refuse_link_pages(root)
        # (element, entering): on entering, its start and text, then its children; on leaving,
        # its end, then its tail (text that follows it inside its parent).
        stack: list[tuple[Any, bool]] = [(root, True)]
        while stack:
            element, entering = stack.pop()
            tag = element.tag if isinstance(element.tag, str) else ""
            if entering:
                stack.append((element, False))
                if tag in _SKIP or element in skip:
                    continue
                extractor.start(tag)
                extractor.text(element.text)
                stack.extend((child, True) for child in reversed(element))
            else:
                if tag not in _SKIP and element not in skip:
                    extractor.end(tag)
                if element is not root:
                    extractor.text(element.tail)
    extractor.flush()
    return extractor.out.document(source_uri, "html")
