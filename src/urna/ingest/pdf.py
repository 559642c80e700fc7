"""PDF (derived): text per page by pypdf, split into blocks at blank lines; pages kept."""

from __future__ import annotations

import io
import logging
import re
from typing import Any

from urna.ingest.document import Assembler, Document
from urna.ingest.metadata import typed

_BLANK = re.compile(r"\n\s*\n")


def load_pdf(data: bytes, source_uri: str) -> Document:
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    reader = PdfReader(io.BytesIO(data))
    out = Assembler()
    for number, page in enumerate(reader.pages, 1):
        text = page.extract_text() or ""
        for part in _BLANK.split(text):
            out.add("paragraph", part, page=number)
    return out.document(source_uri, "pdf", _properties(reader))


def _properties(reader: Any) -> dict[str, Any]:
    """The document properties: title, author, created (a UTC time)."""
    try:
        info = reader.metadata
    except Exception:  # a broken info dictionary loses the properties, not the text
        return {}
    if info is None:
        return {}
    raw: dict[str, Any] = {"title": info.get("/Title"), "author": info.get("/Author")}
    try:
        raw["created"] = info.creation_date
    except Exception:  # an unparsable date is left out
        raw["created"] = None
    raw = {k: (str(v) if isinstance(v, str) else v) for k, v in raw.items()}
    return typed(raw)
