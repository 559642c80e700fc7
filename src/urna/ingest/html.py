"""HTML (derived): block-level text by the standard library's parser; scripts and styles dropped."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from urna.ingest.document import Assembler, Document

_SKIP = {"script", "style", "noscript", "template", "head", "svg"}
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
    "table",
    "tr",
}
_SPACE = re.compile(r"\s+")


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out = Assembler()
        self.skip = 0
        self.buf: list[str] = []
        self.kind = "paragraph"
        self.level = 0
        self.pre = 0
        self.row: list[str] | None = None
        self.rows: list[str] = []
        self.cell: list[str] | None = None

    def flush(self) -> None:
        raw = "".join(self.buf)
        self.buf = []
        text = raw.strip("\n") if self.pre else _SPACE.sub(" ", raw).strip()
        if text:
            title = text if self.kind == "heading" else ""
            self.out.add(self.kind, text, level=self.level, title=title)
        self.kind, self.level = "paragraph", 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
            return
        if self.skip:
            return
        if tag == "table":
            self.flush()
            self.rows = []
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []
        elif tag in _HEADINGS:
            self.flush()
            self.kind, self.level = "heading", _HEADINGS[tag]
        elif tag in _BLOCKS:
            self.flush()
            self.kind = _BLOCKS[tag]
            if tag == "pre":
                self.pre += 1
        elif tag in _BREAKS:
            self.flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append(_SPACE.sub(" ", "".join(self.cell)).strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if any(self.row):
                self.rows.append(" | ".join(self.row))
            self.row = None
        elif tag == "table":
            self.out.add("table", "\n".join(self.rows))
            self.rows = []
        elif tag in _HEADINGS or tag in _BLOCKS or tag in _BREAKS:
            self.flush()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.cell is not None:
            self.cell.append(data)
        else:
            self.buf.append(data)


def load_html(data: bytes, source_uri: str) -> Document:
    parser = _Extractor()
    parser.feed(data.decode("utf-8", errors="replace"))
    parser.close()
    parser.flush()
    return parser.out.document(source_uri, "html")
