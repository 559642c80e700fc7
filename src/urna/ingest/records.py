"""JSONL and CSV (derived): one document per record, named ``<file>#<id>``.

A JSONL record is an object with ``text`` (required) and optionally ``title``
and an id (``_id``, then ``id``; else its line number): the BEIR layout of
``corpus.jsonl`` included. A CSV record is a row; the header names columns,
and the text is one ``column: value`` line per non-empty cell (an ``id`` or
``_id`` column names the record, else the row number).
"""

from __future__ import annotations

import csv
import io
import json

from urna.errors import BuildError
from urna.ingest.document import Assembler, Document


def _record(source_uri: str, rid: str, kind: str, title: str, text: str) -> Document:
    out = Assembler()
    if title.strip():
        out.add("heading", title, level=1, title=title.strip())
    for part in text.split("\n\n"):
        out.add("paragraph", part)
    return out.document(f"{source_uri}#{rid}", kind)


def load_jsonl(data: bytes, source_uri: str) -> list[Document]:
    docs = []
    seen: set[str] = set()
    for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BuildError(f"{source_uri} line {number}: invalid JSON: {exc.msg}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
            raise BuildError(f"{source_uri} line {number}: expected an object with a text string")
        rid = str(obj.get("_id", obj.get("id", number)))
        if rid in seen:
            raise BuildError(f"{source_uri} line {number}: id {rid!r} appears twice")
        seen.add(rid)
        title = obj.get("title") if isinstance(obj.get("title"), str) else ""
        doc = _record(source_uri, rid, "jsonl", title or "", obj["text"])
        if doc.blocks:
            docs.append(doc)
    return docs


def load_csv(data: bytes, source_uri: str) -> list[Document]:
    text = data.decode("utf-8-sig")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames:
        raise BuildError(f"{source_uri}: a CSV file needs a header row")
    docs = []
    for number, row in enumerate(reader, 1):
        rid = str(row.get("_id") or row.get("id") or f"row={number}")
        lines = [
            f"{k}: {v.strip()}"
            for k, v in row.items()
            if k not in (None, "id", "_id") and isinstance(v, str) and v.strip()
        ]
        doc = _record(source_uri, rid, "csv", "", "\n".join(lines))
        if doc.blocks:
            docs.append(doc)
    return docs
