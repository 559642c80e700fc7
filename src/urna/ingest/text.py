"""Plain text: blocks are runs of non-blank lines; spans index the file's bytes."""

from __future__ import annotations

import re

from urna.ingest.document import Block, Document

_BLOCK = re.compile(rb"(?:[^\n]*[^\s][^\n]*(?:\n|$))+")


def load_text(data: bytes, source_uri: str) -> Document:
    data.decode("utf-8")  # raises UnicodeDecodeError for a non-UTF-8 file
    blocks = []
    for match in _BLOCK.finditer(data):
        start, end = match.span()
        while end > start and data[end - 1 : end] in (b"\n", b"\r", b" ", b"\t"):
            end -= 1
        while start < end and data[start : start + 1] in (b" ", b"\t", b"\r"):
            start += 1
        if end > start:
            blocks.append(Block("paragraph", start, end))
    return Document(source_uri, "text", data, False, blocks)
