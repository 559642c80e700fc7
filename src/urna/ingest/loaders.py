"""Which loader reads which file, by extension."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from urna.format.regular import read_regular
from urna.ingest.document import Document
from urna.ingest.docx import load_docx
from urna.ingest.html import VERSION as HTML_VERSION
from urna.ingest.html import load_html
from urna.ingest.markdown import load_markdown
from urna.ingest.pdf import load_pdf
from urna.ingest.records import load_csv, load_jsonl
from urna.ingest.text import load_text

Loader = Callable[[bytes, str], Document | list[Document]]


@dataclass(frozen=True)
class Format:
    """A supported file format: its name, whether spans index extracted text (derived) rather
    than the file's own bytes, and its loader."""

    kind: str
    derived: bool
    loader: Loader


_MARKDOWN = Format("markdown", False, load_markdown)
_TEXT = Format("text", False, load_text)
_HTML = Format("html", True, load_html)
FORMATS: dict[str, Format] = {
    ".md": _MARKDOWN,
    ".markdown": _MARKDOWN,
    ".txt": _TEXT,
    ".text": _TEXT,
    ".rst": _TEXT,
    ".html": _HTML,
    ".htm": _HTML,
    ".pdf": Format("pdf", True, load_pdf),
    ".docx": Format("docx", True, load_docx),
    ".jsonl": Format("jsonl", True, load_jsonl),
    ".csv": Format("csv", True, load_csv),
}


def kind_of(path: str | os.PathLike[str]) -> str | None:
    """The kind of a file by its suffix (None: not a supported document). String work only:
    a watched folder asks this of every file at every look."""
    name = os.fspath(path)
    dot = name.rfind(".")
    if dot <= name.rfind("/") + 1:  # no suffix, or a name that starts with its only dot
        return None
    found = FORMATS.get(name[dot:].lower())
    return found.kind if found else None


def is_derived(path: Path) -> bool:
    """Whether spans of this source index its extracted text rather than its bytes."""
    found = FORMATS.get(path.suffix.lower())
    return found is not None and found.derived


EXTRACTORS = {"html": HTML_VERSION}  # recorded in a file's provenance: what it was read by


def load(
    path: Path, source_uri: str, extractors: Mapping[str, int] | None = None
) -> list[Document]:
    """Read and parse one file; raises on unreadable or malformed input. ``extractors`` names
    an earlier extractor version by kind (a file built by it verifies with it); a kind it
    does not name is read by the extractor of version 1, the one before versions were
    recorded, and ``None`` means the current ones."""
    found = FORMATS.get(path.suffix.lower())
    if found is None:
        raise ValueError(f"unsupported file type {path.suffix or '(none)'}")
    data = read_regular(path)  # a FIFO or device named like a document is refused, not read
    if found.kind == "html":
        version = EXTRACTORS["html"] if extractors is None else extractors.get("html", 1)
        result: Document | list[Document] = load_html(data, source_uri, version)
    else:
        result = found.loader(data, source_uri)
    return result if isinstance(result, list) else [result]
