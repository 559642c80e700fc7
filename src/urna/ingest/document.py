"""What a loader produces: a document's bytes and its structural blocks, with byte spans.

For text formats (Markdown, plain text) ``data`` is the source file itself,
so a span is a range of the file's bytes and ``cite --verify-source`` can
re-read it. For derived formats (HTML, PDF, DOCX, JSONL and CSV records)
``data`` is the UTF-8 text urna extracts from the source (blocks joined by a
blank line); a span indexes that extracted text, which the same extractor
reproduces from the same source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BLOCK_KINDS = ("heading", "paragraph", "list_item", "table", "code")


@dataclass(frozen=True)
class Block:
    kind: str
    start: int
    end: int
    level: int = 0  # heading level (1 = top)
    title: str = ""  # a heading's clean text, for section paths
    page: int = 0  # 1-based page for PDF, 0 where pages do not exist


@dataclass
class Document:
    source_uri: str
    kind: str
    data: bytes
    derived: bool
    blocks: list[Block] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)  # typed (``ingest/metadata.py``)

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")


class Assembler:
    """Builds a derived document: append blocks of text, get spans into the joined text."""

    SEPARATOR = b"\n\n"

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        self.blocks: list[Block] = []

    def add(self, kind: str, text: str, *, level: int = 0, title: str = "", page: int = 0) -> None:
        text = text.strip()
        if not text:
            return
        raw = text.encode("utf-8")
        if self._parts:
            self._parts.append(self.SEPARATOR)
            self._size += len(self.SEPARATOR)
        start = self._size
        self._parts.append(raw)
        self._size += len(raw)
        self.blocks.append(Block(kind, start, self._size, level, title, page))

    def document(
        self, source_uri: str, kind: str, metadata: dict[str, Any] | None = None
    ) -> Document:
        data = b"".join(self._parts)
        return Document(source_uri, kind, data, True, self.blocks, dict(metadata or {}))
