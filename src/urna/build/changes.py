"""What changed since a collection's head: sources added, changed and removed.

The head's live documents come from the source tables of its files (``format/sources.py``)
less the catalog's deletions. A discovered file whose bytes hash as recorded is not even
loaded; a file that changed is loaded, and each of its documents compared by fingerprint
(kind, bytes and metadata), so one edited record of a large JSONL file changes one source.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from urna.build.discover import Found, discover
from urna.build.run import BuildSummary, Report, canonical_order, load_files
from urna.build.spec import BuildSpec
from urna.format.atomic import atomic_writer
from urna.format.catalog import Catalog
from urna.format.sources import SourceRow, read_table
from urna.ingest.chunker import ChunkSpan
from urna.ingest.document import Document


def file_sha(path: str | Path) -> str:
    """The SHA-256 of a file's bytes ("" when it cannot be read: it is then loaded)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                h.update(block)
    except OSError:
        return ""
    return h.hexdigest()


class StatCache:
    """What Git's index does for ``git status``: each file's size, modification time and
    SHA-256 as last hashed, kept in ``DIR/.stat-cache`` (not part of any version; one line a
    file, ``uri TAB size TAB mtime_ns TAB sha``, fast to read and write at 100,000 files). A
    file whose size and mtime match is not read again, unless its mtime is within
    ``RACY_NS`` of when the cache was written (it may have changed in the same tick). A
    process that updates the same folder again keeps its cache in memory."""

    NAME = ".stat-cache"
    RACY_NS = 2_000_000_000
    _kept: ClassVar[dict[str, tuple[tuple[int, int], StatCache]]] = {}

    def __init__(self, folder: Path) -> None:
        self.path = folder / self.NAME
        self.entries: dict[str, tuple[int, int, str]] = {}
        self.written = 0
        self.dirty = False

    @classmethod
    def of(cls, folder: Path) -> StatCache:
        """The folder's cache: this process's own when the file is as it left it."""
        path = folder / cls.NAME
        try:
            st = path.stat()
            stamp = (st.st_ino, st.st_mtime_ns)
        except OSError:
            stamp = (0, 0)
        kept = cls._kept.get(str(folder))
        if kept is not None and kept[0] == stamp:
            return kept[1]
        cache = cls(folder)
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
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
        with contextlib.suppress(OSError):
            st = self.path.stat()
            StatCache._kept[str(self.path.parent)] = ((st.st_ino, st.st_mtime_ns), self)


def doc_sha(doc: Document) -> str:
    """A document's fingerprint: its kind, bytes and metadata (as the spec's rules left it)."""
    h = hashlib.sha256(doc.kind.encode("utf-8") + b"\0" + doc.data + b"\0")
    h.update(json.dumps(doc.metadata, sort_keys=True, default=str).encode("utf-8"))
    return h.hexdigest()


@dataclass(frozen=True)
class Origin:
    """A loaded document and the file it came from."""

    doc: Document
    file: str  # the file's source_uri
    file_sha: str


def rows_for(origins: list[Origin], spans: list[ChunkSpan]) -> list[SourceRow]:
    """Each document's row, with its chunk range in a file of these spans (both in source
    order; a document may give no chunk)."""
    rows, at = [], 0
    for o in origins:
        lo = at
        while at < len(spans) and spans[at].source_uri == o.doc.source_uri:
            at += 1
        rows.append(SourceRow(o.doc.source_uri, o.file, o.file_sha, doc_sha(o.doc), lo, at))
    if at != len(spans):
        raise AssertionError("spans out of source order")  # chunk_documents keeps doc order
    return rows


@dataclass
class Live:
    """The head's live documents: uri -> (position in ``catalog.files``, row)."""

    docs: dict[str, tuple[int, SourceRow]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # file source_uri -> its sha

    @staticmethod
    def of(folder: Path, catalog: Catalog) -> Live | None:
        """None when a file has no source table (written before tables): no update then.
        The live documents of a version read again in this process are not rebuilt."""
        key = (str(folder), catalog.version)
        if key in _LIVE:
            return _LIVE[key]
        live = Live._read(folder, catalog)
        _LIVE.clear()  # one version per process is what a watch or build asks again
        _LIVE[key] = live
        return live

    @staticmethod
    def _read(folder: Path, catalog: Catalog) -> Live | None:
        live = Live()
        for position, entry in enumerate(catalog.files):
            rows = read_table(folder, entry.file or "")
            if rows is None:
                return None
            dead = {uri for uri, _, _ in entry.deleted}
            for row in rows:
                if row.uri not in dead:
                    live.docs[row.uri] = (position, row)
                    live.files[row.file] = row.file_sha
        return live


_LIVE: dict[tuple[str, str], Live | None] = {}


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
    files, skipped = discover(spec.sources, spec.base)
    for path, reason in skipped:
        warn(f"skipped {path}: {reason}")
    if summary is not None:
        summary.skipped = [(str(p), r) for p, r in skipped]
    seen = {f.source_uri for f in files}
    hashed = stats.sha if stats is not None else (lambda f: file_sha(f.location))
    todo = [(f, sha) for f in files if (sha := hashed(f)) != live.files.get(f.source_uri)]
    loaded = load_files([f for f, _ in todo], summary, warn, spec.fields)
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
    out.new.sort(key=lambda o: canonical_order(o.doc))
    return out, files
