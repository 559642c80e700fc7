"""PDF (derived): text per page by pypdf, split into blocks at blank lines; pages kept."""

from __future__ import annotations

import io
import logging
import re

from urna.ingest.document import Assembler, Document

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
    return out.document(source_uri, "pdf")
