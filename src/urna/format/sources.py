"""A data file's source table: ``<stem>.sources.json`` beside each shard or segment file.

One row per document the file stores, in source order: its source_uri, the file it was read
from (the discovered path), the SHA-256 of that file's bytes and of the document (kind,
bytes and metadata), and the document's chunk range [lo, hi) in the file. An update reads
the tables of the live files to learn what changed without loading any unchanged file; a
deletion names a row's source and range. The table is written (atomically) before the
catalog that names its file, and is as immutable as that file. Canonical JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from urna.errors import FormatError, UrnaError
from urna.format.atomic import atomic_writer
from urna.format.catalog import canonical
from urna.format.manifest import strict_loads
from urna.format.regular import inside, read_regular

MAX_TABLE = 256 << 20


@dataclass(frozen=True)
class SourceRow:
    uri: str  # the document's source_uri
    file: str  # the discovered file's source_uri (a JSONL file holds many documents)
    file_sha: str
    doc_sha: str
    lo: int
    hi: int


def table_name(data_file: str) -> str:
    return data_file.removesuffix(".urna") + ".sources.json"


def write_table(path: Path, rows: list[SourceRow]) -> None:
    """Write the table of the data file at ``path``."""
    doc = {
        "format": "urna.sources",
        "sources": [[r.uri, r.file, r.file_sha, r.doc_sha, r.lo, r.hi] for r in rows],
    }
    with atomic_writer(path.parent / table_name(path.name)) as handle:
        handle.write(canonical(doc))


def read_table(folder: Path, data_file: str) -> list[SourceRow] | None:
    """The table of one data file in ``folder``; None when the file has none (built before
    tables existed); a damaged table is an error naming it."""
    name = table_name(data_file)
    try:
        raw = read_regular(inside(folder, name), MAX_TABLE)
    except FileNotFoundError:
        return None
    except (OSError, UrnaError) as exc:
        raise _bad(name, str(exc)) from None
    try:
        doc = strict_loads(raw.decode("utf-8"))
        rows = [SourceRow(*row) for row in doc["sources"]]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise _bad(name, f"not a source table ({exc})") from None
    end = 0
    for r in rows:
        if not (
            all(isinstance(x, str) for x in (r.uri, r.file, r.file_sha, r.doc_sha))
            and all(isinstance(x, int) and not isinstance(x, bool) for x in (r.lo, r.hi))
            and r.lo == end
            and r.hi >= r.lo
        ):
            raise _bad(name, f"row {r.uri!r} is malformed or out of order")
        end = r.hi
    return rows


def _bad(name: str, message: str) -> FormatError:
    return FormatError(f"source table {name}: {message}", check=19, section=name)
