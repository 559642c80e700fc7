"""What changed since a collection's head: sources added, changed and removed.

The head's live documents come from the source tables of its files (``format/sources.py``)
less the catalog's deletions. A discovered file whose bytes hash as recorded is not even
loaded; a file that changed is loaded, and each of its documents compared by fingerprint
(kind, bytes and metadata), so one edited record of a large JSONL file changes one source.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from urna.build.discover import Found
from urna.build.documents import Origin, canonical_order, doc_sha, file_sha, found_files, load_files
from urna.build.duplicates import against
from urna.build.spec import BuildSpec
from urna.build.summary import BuildSummary, Report
from urna.format.atomic import atomic_writer
from urna.format.catalog import Catalog
from urna.format.regular import read_regular
from urna.format.sources import SourceRow, check_rows, read_table


class StatCache:
    """What Git's index does for ``git status``: each file's size, modification time and
    SHA-256 as last hashed, kept in ``DIR/.stat-cache`` (not part of any version; one line a
    file, ``uri TAB size TAB mtime_ns TAB sha``, fast to read and write at 100,000 files). A
    file whose size and mtime match is not read again, unless its mtime is within
    ``RACY_NS`` of when the cache was written (it may have changed in the same tick). A
    writer that updates the same folder again keeps its cache in memory (``stamp``)."""

    NAME = ".stat-cache"
    RACY_NS = 2_000_000_000

    def __init__(self, folder: Path) -> None:
        self.path = folder / self.NAME
        self.entries: dict[str, tuple[int, int, str]] = {}
        self.written = 0
        self.dirty = False

    @staticmethod
    def stamp(folder: Path) -> tuple[int, int]:
        """The cache file's (inode, mtime): unchanged, a cache kept in memory is still true."""
        try:
            st = (folder / StatCache.NAME).stat()
        except OSError:
            return (0, 0)
        return (st.st_ino, st.st_mtime_ns)

    @classmethod
    def of(cls, folder: Path) -> StatCache:
        """The folder's cache as its file holds it."""
        path = folder / cls.NAME
        cache = cls(folder)
        try:
            lines = read_regular(path).decode("utf-8").split("\n")  # never a FIFO
            cache.written = int(lines[0])
            for line in lines[1:]:
                if line:
                    uri, size, mtime, sha = line.split("\t")
                    cache.entries[uri] = (int(size), int(mtime), sha)
        except (OSError, ValueError, UnicodeDecodeError):
            cache.entries, cache.written = {}, 0  # none, or a damaged one: hash everything
        return cache

    def sha(self, found: Found) -> str:
        try:
            st = os.stat(found.location)
        except OSError:
            return ""
        known = self.entries.get(found.source_uri)
        if (
            known is not None
            and known[0] == st.st_size
            and known[1] == st.st_mtime_ns
            and st.st_mtime_ns < self.written - self.RACY_NS
        ):
            return known[2]
        sha = file_sha(found.location)
        self.entries[found.source_uri] = (st.st_size, st.st_mtime_ns, sha)
        self.dirty = True
        return sha

    def save(self, keep: set[str]) -> None:
        """Write the cache when a file was hashed or left (else the old one stays true)."""
        gone = set(self.entries) - keep
        if not self.dirty and not gone:
            return
        for uri in gone:
            del self.entries[uri]
        self.written = time.time_ns()
        body = "".join(f"{u}\t{a}\t{b}\t{c}\n" for u, (a, b, c) in self.entries.items())
        with contextlib.suppress(OSError), atomic_writer(self.path) as handle:
            handle.write(f"{self.written}\n{body}".encode())
        self.dirty = False


@dataclass
class Live:
    """The head's live documents: uri -> (position in ``catalog.files``, row)."""

    docs: dict[str, tuple[int, SourceRow]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # file source_uri -> its sha

    @staticmethod
    def of(folder: Path, catalog: Catalog) -> Live | None:
        """None when a file has no source table (written before tables): no update then."""
        live = Live()
        for position, entry in enumerate(catalog.files):
            rows = read_table(folder, entry.file or "")
            if rows is None:
                return None
            check_rows(entry.file or "", rows, entry.n_chunks, entry.deleted)
            dead = {uri for uri, _, _ in entry.deleted}
            for row in rows:
                if row.uri not in dead:
                    live.docs[row.uri] = (position, row)
                    live.files[row.file] = row.file_sha
        return live


@dataclass
class Changes:
    new: list[Origin]  # documents to write (added or changed), in source order
    gone: set[str]  # live sources no longer counting (changed or removed)
    added: int = 0
    changed: int = 0
    removed: int = 0

    @property
    def any(self) -> bool:
        return bool(self.new or self.gone)


def changes(
    spec: BuildSpec,
    live: Live,
    summary: BuildSummary | None,
    warn: Report,
    stats: StatCache | None = None,
) -> tuple[Changes, list[Found]]:
    """The changes from ``live`` to the sources on disk, and the files discovered (``stats``
    spares reading files whose size and mtime are as last hashed)."""
    files = found_files(spec, summary, warn)
    seen = {f.source_uri for f in files}
    hashed = stats.sha if stats is not None else (lambda f: file_sha(f.location))
    todo = [(f, sha) for f in files if (sha := hashed(f)) != live.files.get(f.source_uri)]
    loaded = load_files([f for f, _ in todo], summary, warn, spec.fields, spec.lang)
    sha_of = {f.source_uri: sha for f, sha in todo}
    reloaded = set(sha_of)
    produced: set[str] = set()
    out = Changes(new=[], gone=set())
    for found, docs in loaded:
        for doc in docs:
            produced.add(doc.source_uri)
            held = live.docs.get(doc.source_uri)
            if held is not None and held[1].doc_sha == doc_sha(doc):
                continue
            out.new.append(Origin(doc, found.source_uri, sha_of[found.source_uri]))
            if held is None:
                out.added += 1
            else:
                out.changed += 1
                out.gone.add(doc.source_uri)
    for uri, (_, row) in live.docs.items():
        if uri in produced:
            continue
        if row.file not in seen or row.file in reloaded:  # its file is gone, or no longer has it
            out.gone.add(uri)
            out.removed += 1
    _skip_duplicates(out, live, summary, warn)
    out.new.sort(key=lambda o: canonical_order(o.doc))
    return out, files


def _skip_duplicates(out: Changes, live: Live, summary: BuildSummary | None, warn: Report) -> None:
    """Keep one document of each text as a full build would (``build/duplicates.py``): a new
    duplicate is not written, a live one that a new document sorts before is deleted."""
    kept = {u: row.text_sha for u, (_, row) in live.docs.items() if u not in out.gone}
    dropped = against(kept, [o.doc for o in out.new])
    if not dropped:
        return
    for origin in out.new:
        uri = origin.doc.source_uri
        if uri not in dropped:
            continue
        if uri in out.gone:  # it changed into a duplicate: its old text goes
            out.changed -= 1
            out.removed += 1
        else:
            out.added -= 1
    out.new = [o for o in out.new if o.doc.source_uri not in dropped]
    delete = {u for u in dropped if u in kept}
    out.gone |= delete
    out.removed += len(delete)
    for uri, held in sorted(dropped.items()):
        warn(f"skipped {uri}: the same text as {held}")
        if summary is not None:
            summary.skipped.append((uri, f"the same text as {held}"))
