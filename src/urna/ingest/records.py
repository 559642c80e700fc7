"""JSONL and CSV (derived): one document per record, named ``<file>#<id>``.

A JSONL record is an object with ``text`` (required) and optionally ``title``
and an id (``_id``, then ``id``; else its line number): the BEIR layout of
``corpus.jsonl`` included. A CSV record is a row; the header names columns,
and the text is one ``column: value`` line per non-empty cell (an ``id`` or
``_id`` column names the record, else the row number).

Metadata (``ingest/metadata.py``): a JSONL record's every top-level field but ``text`` and the
id (``title`` included); a CSV row's every column but the id, each column typed when all its
cells parse as one type (integer, float, boolean, date), else string.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from urna.errors import BuildError
from urna.ingest.document import Assembler, Document
from urna.ingest.metadata import cell, column_types, typed

ID_FIELDS = ("_id", "id")


def _record(
    source_uri: str, rid: str, kind: str, title: str, text: str, fields: dict[str, Any]
) -> Document:
    out = Assembler()
    if title.strip():
        out.add("heading", title, level=1, title=title.strip())
    for part in text.split("\n\n"):
        out.add("paragraph", part)
    return out.document(f"{source_uri}#{rid}", kind, fields)


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
        rest = {k: v for k, v in obj.items() if k != "text" and k not in ID_FIELDS}
        fields = typed(rest, strings_as_dates=True)
        doc = _record(source_uri, rid, "jsonl", title or "", obj["text"], fields)
        if doc.blocks:
            docs.append(doc)
    return docs


def load_csv(data: bytes, source_uri: str) -> list[Document]:
    text = data.decode("utf-8-sig")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames:
        raise BuildError(f"{source_uri}: a CSV file needs a header row")
    rows = list(reader)
    names = [c for c in reader.fieldnames if c not in ID_FIELDS]
    kinds = column_types(rows, names)
    docs = []
    for number, row in enumerate(rows, 1):
        rid = str(row.get("_id") or row.get("id") or f"row={number}")
        lines = [
            f"{k}: {v.strip()}"
            for k, v in row.items()
            if k not in (None, "id", "_id") and isinstance(v, str) and v.strip()
        ]
        values = {c: cell(row[c], kinds[c]) for c in names if isinstance(row.get(c), str)}
        fields = {c: v for c, v in values.items() if v is not None}
        doc = _record(source_uri, rid, "csv", "", "\n".join(lines), fields)
        if doc.blocks:
            docs.append(doc)
    return docs
