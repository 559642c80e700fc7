"""DOCX (derived): paragraphs and tables in body order by python-docx; Heading styles kept."""

from __future__ import annotations

import io
import re

from urna.ingest.document import Assembler, Document
from urna.ingest.metadata import typed

_HEADING = re.compile(r"^(?:Heading|heading)\s*(\d)$")


def load_docx(data: bytes, source_uri: str) -> Document:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(data))
    out = Assembler()
    body = document.element.body
    for child in body.iterchildren():
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            para = Paragraph(child, document)
            style = para.style.name if para.style is not None else ""
            text = para.text
            match = _HEADING.match(style or "")
            if match or style == "Title":
                level = int(match.group(1)) if match else 1
                out.add("heading", text, level=level, title=text.strip())
            elif style and style.startswith("List"):
                out.add("list_item", text)
            else:
                out.add("paragraph", text)
        elif tag == "tbl":
            table = Table(child, document)
            rows = [" | ".join(cell.text.strip() for cell in row.cells) for row in table.rows]
            out.add("table", "\n".join(r for r in rows if r.strip(" |")))
    props = document.core_properties
    raw = {"title": props.title, "author": props.author, "created": props.created}
    return out.document(source_uri, "docx", typed(raw))
