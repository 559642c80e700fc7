"""Markdown via markdown-it-py: headings, paragraphs, list items, tables, code; file-byte spans."""

from __future__ import annotations

from markdown_it import MarkdownIt

from urna.ingest.document import Block, Document
from urna.ingest.metadata import front_matter

_PARSER = MarkdownIt("commonmark").enable("table")
_CONTAINERS = {
    "paragraph_open": "paragraph",
    "table_open": "table",
    "blockquote_open": "paragraph",
    "html_block": "paragraph",
    "fence": "code",
    "code_block": "code",
}


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    pos = data.find(b"\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = data.find(b"\n", pos + 1)
    return starts


def load_markdown(data: bytes, source_uri: str) -> Document:
    """Blocks with file-byte spans; YAML front matter becomes metadata, not text (its lines
    are parsed as blank, so every span stays a range of the file's own bytes)."""
    text = data.decode("utf-8")
    fm_end, fields = front_matter(data, source_uri)
    if fm_end:
        head = data[:fm_end].decode("utf-8")
        text = "\n" * head.count("\n") + text[len(head) :]
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _line_starts(data)
    offset = 3 if data.startswith(b"\xef\xbb\xbf") else 0

    def span(line_from: int, line_to: int) -> tuple[int, int]:
        start = lines[line_from] + (offset if line_from == 0 else 0)
        end = lines[line_to] if line_to < len(lines) else len(data)
        while end > start and data[end - 1 : end] in (b"\n", b"\r", b" ", b"\t"):
            end -= 1
        return start, end

    tokens = _PARSER.parse(text)
    blocks: list[Block] = []
    for i, tok in enumerate(tokens):
        if tok.map is None:
            continue
        if tok.type == "heading_open" and tok.level == 0:
            start, end = span(*tok.map)
            title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            blocks.append(Block("heading", start, end, level=int(tok.tag[1:]), title=title))
        elif tok.type == "list_item_open" and tok.level == 1:
            blocks.append(Block("list_item", *span(*tok.map)))
        elif tok.type in _CONTAINERS and tok.level == 0:
            start, end = span(*tok.map)
            if end > start:
                blocks.append(Block(_CONTAINERS[tok.type], start, end))
    return Document(source_uri, "markdown", data, False, blocks, fields)
