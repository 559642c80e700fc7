"""A data file's source table: ``<stem>.sources.json`` beside each shard or segment file.

One row per document the file stores, in source order: its source_uri, the file it was read
from (the discovered path), the SHA-256 of that file's bytes and of the document (kind,
bytes and metadata), the document's chunk range [lo, hi) in the file, and the SHA-256 of its
text (what duplicates are told by: ``build/duplicates.py``; a table written before has six
columns, and its rows no text hash). An update reads
the tables of the live files to learn what changed without loading any unchanged file; a
deletion names a row's source and range. The table is written (atomically) before the
catalog that names its file, and is as immutable as that file. Canonical JSON.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urna.errors import FormatError, UrnaError
from urna.format.atomic import atomic_writer
from urna.format.catalog import canonical
from urna.format.manifest import strict_loads
from urna.format.regular import inside, read_regular

MAX_TABLE = 256 << 20
SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _plain_loads(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@dataclass(frozen=True)
class SourceRow:
    uri: str  # the document's source_uri
    file: str  # the discovered file's source_uri (a JSONL file holds many documents)
    file_sha: str
    doc_sha: str
    lo: int
    hi: int
    text_sha: str = ""


def table_name(data_file: str) -> str:
    return data_file.removesuffix(".urna") + ".sources.json"


def write_table(path: Path, rows: list[SourceRow]) -> None:
    """Write the table of the data file at ``path``."""
    doc = {
        "format": "urna.sources",
        "sources": [[r.uri, r.file, r.file_sha, r.doc_sha, r.lo, r.hi, r.text_sha] for r in rows],
    }
    with atomic_writer(path.parent / table_name(path.name)) as handle:
        handle.write(canonical(doc))


_READ: OrderedDict[tuple[str, int, int, int], list[SourceRow]] = OrderedDict()
_READ_LOCK = threading.Lock()
KEPT = 64  # tables kept parsed in a process (a watching server reads the same ones again)


def read_table(folder: Path, data_file: str) -> list[SourceRow] | None:
    """The table of one data file in ``folder``; None when the file has none (built before
    tables existed); a damaged table is an error naming it. Tables are immutable: one read
    again (same path, inode, size and mtime) is not parsed again."""
    name = table_name(data_file)
    try:
        st = os.stat(inside(folder, name))
    except FileNotFoundError:
        return None
    except (OSError, UrnaError) as exc:
        raise _bad(name, str(exc)) from None
    key = (str(folder / name), st.st_ino, st.st_size, st.st_mtime_ns)
    with _READ_LOCK:
        known = _READ.get(key)
        if known is not None:
            _READ.move_to_end(key)
            return known
    rows = _parse(folder, name)
    if rows is not None:
        with _READ_LOCK:
            _READ[key] = rows
            while len(_READ) > KEPT:
                _READ.popitem(last=False)
    return rows


def check_rows(
    name: str, rows: list[SourceRow], n_chunks: int, deleted: Sequence[tuple[str, int, int]]
) -> None:
    """Refuse a table that does not tile its file's ``n_chunks`` chunks (as the catalog counts
    them), or a deletion that is not one of its rows: every writer runs this before it
    trusts a table, as ``validate`` does."""
    if (rows[-1].hi if rows else 0) != n_chunks:
        raise _bad(table_name(name), f"its rows do not cover the file's {n_chunks} chunks")
    spans = {row.uri: (row.lo, row.hi) for row in rows}
    for uri, lo, hi in deleted:
        if spans.get(uri) != (lo, hi):
            raise _bad(
                table_name(name), f"the catalog deletes [{lo}, {hi}) as {uri}: no such source"
            )


def _parse(folder: Path, name: str) -> list[SourceRow] | None:
    try:
        raw = read_regular(inside(folder, name), MAX_TABLE)
    except FileNotFoundError:
        return None
    except (OSError, UrnaError) as exc:
        raise _bad(name, str(exc)) from None
    try:
        text = raw.decode("utf-8")
        # Rows are plain lists: the strict parser's walk (for lone surrogates) only when an
        # escape could be one, which an honest table of UTF-8 paths never holds.
        loads = strict_loads if SURROGATE.search(text) else _plain_loads
        doc = loads(text)
        rows = [SourceRow(*row) for row in doc["sources"] if len(row) in (6, 7)]
        if len(rows) != len(doc["sources"]):
            raise ValueError("a row has neither 6 nor 7 columns")
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise _bad(name, f"not a source table ({exc})") from None
    end = 0
    for r in rows:
        if not (
            all(isinstance(x, str) for x in (r.uri, r.file, r.file_sha, r.doc_sha, r.text_sha))
            and all(isinstance(x, int) and not isinstance(x, bool) for x in (r.lo, r.hi))
            and r.lo == end
            and r.hi >= r.lo
        ):
            raise _bad(name, f"row {r.uri!r} is malformed or out of order")
        end = r.hi
    return rows


def _bad(name: str, message: str) -> FormatError:
    return FormatError(f"source table {name}: {message}", check=19, section=name)
