"""Which loader reads which file, by extension."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from urna.ingest.document import Document
from urna.ingest.docx import load_docx
from urna.ingest.html import load_html
from urna.ingest.markdown import load_markdown
from urna.ingest.pdf import load_pdf
from urna.ingest.records import load_csv, load_jsonl
from urna.ingest.text import load_text

Loader = Callable[[bytes, str], Document | list[Document]]

LOADERS: dict[str, tuple[str, Loader]] = {
    ".md": ("markdown", load_markdown),
    ".markdown": ("markdown", load_markdown),
    ".txt": ("text", load_text),
    ".text": ("text", load_text),
    ".rst": ("text", load_text),
    ".html": ("html", load_html),
    ".htm": ("html", load_html),
    ".pdf": ("pdf", load_pdf),
    ".docx": ("docx", load_docx),
    ".jsonl": ("jsonl", load_jsonl),
    ".csv": ("csv", load_csv),
}


def kind_of(path: Path) -> str | None:
    entry = LOADERS.get(path.suffix.lower())
    return entry[0] if entry else None


def load(path: Path, source_uri: str) -> list[Document]:
    """Read and parse one file; raises on unreadable or malformed input."""
    entry = LOADERS.get(path.suffix.lower())
    if entry is None:
        raise ValueError(f"unsupported file type {path.suffix or '(none)'}")
    data = path.read_bytes()
    result = entry[1](data, source_uri)
    return result if isinstance(result, list) else [result]
