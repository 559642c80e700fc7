"""The databases a server answers for: .urna files named by their stem, verified once at start."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urna.errors import FileError, QueryError, UrnaError
from urna.format.catalog import CATALOG, Catalog, is_collection
from urna.format.regular import read_regular
from urna.format.versions import resolve_at
from urna.search.collection import Collection
from urna.search.opening import open_collection, open_path
from urna.search.protocol import Searchable


@dataclass
class Databases:
    """Name -> open corpus. Swapping a name's corpus is atomic for readers (one dict store)."""

    corpora: dict[str, Searchable] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    earlier: OrderedDict[tuple[str, str], Searchable] = field(default_factory=OrderedDict)

    KEPT = 8  # earlier versions kept open (``at`` requests), the least recently used dropped

    checked: dict[str, float] = field(default_factory=dict)

    FOLLOW = 0.5  # seconds between looks at a served collection's catalog

    def public(self, message: str) -> str:
        """``message`` as a client may read it: the folders of what is served (and of its
        sources) left out of every path it names, so an error over HTTP or MCP names a file
        relative to what was served, never the server's absolute paths."""
        folders: set[str] = set()
        for corpus in list(self.corpora.values()):
            folders.add(str(Path(corpus.path).resolve().parent))
            for shard in getattr(corpus, "shards", [corpus]):  # where its sources lie
                with contextlib.suppress(Exception):
                    folders.update(str(root) for root in shard.source_roots())
        for folder in sorted(folders, key=len, reverse=True):  # the deepest first
            if folder != os.sep:
                message = message.replace(folder.rstrip(os.sep) + os.sep, "")
        return message

    def get(self, name: str) -> Searchable | None:
        corpus = self.corpora.get(name)
        if isinstance(corpus, Collection):
            return self._follow(name, corpus)
        return corpus

    def _follow(self, name: str, current: Collection) -> Collection:
        """A served collection follows its folder: a new head (a build, a compaction, another
        server's watch) is opened sharing every unchanged file, then swapped in."""
        now = time.monotonic()
        with self.lock:
            if now - self.checked.get(name, 0.0) < self.FOLLOW:
                return current
            self.checked[name] = now
        try:
            raw = read_regular(current.path / CATALOG)
        except OSError:
            return current
        if Catalog.version_of(raw) in (current.version, current.head):
            return current
        reuse = {s.facts.name: s for s in current.shards}
        try:
            newer = open_collection(current.path, private=True, reuse=reuse)
        except UrnaError:
            return current  # a head that does not open is not served; the last good one is
        with self.lock:
            if self.corpora.get(name) is current:
                self.corpora[name] = newer
            return self.corpora.get(name, newer)  # type: ignore[return-value]

    def at(self, name: str, at: str) -> Searchable:
        """A served collection's earlier version (``at``: a version prefix or an ISO time),
        opened once and kept among the KEPT most recently asked."""
        current = self.corpora.get(name)
        if not isinstance(current, Collection):
            raise QueryError(f"at needs a collection: database {name} is one file")
        version = resolve_at(current.path, at)
        if version == current.version:
            return current
        key = (name, version)
        with self.lock:
            found = self.earlier.get(key)
            if found is not None:
                self.earlier.move_to_end(key)
                return found
        opened = open_collection(current.path, private=True, at=version)
        with self.lock:
            self.earlier[key] = opened
            while len(self.earlier) > self.KEPT:
                self.earlier.popitem(last=False)
        return opened

    def names(self) -> list[str]:
        return sorted(self.corpora)

    def swap(self, name: str, corpus: Searchable) -> None:
        """Publish a new corpus under ``name``. The old one is not closed here: a request may
        still be reading it, and its memory map is released when the last reference goes."""
        with self.lock:
            self.corpora[name] = corpus

    def drop(self, name: str) -> None:
        """Stop serving ``name`` (requests for it then get 404); its map closes with its last
        reader, as on a swap."""
        with self.lock:
            self.corpora.pop(name, None)


def database_record(name: str, corpus: Searchable) -> dict[str, Any]:
    """A served database as /v1/databases and the MCP tool list_corpora describe it."""
    return {
        "name": name,
        "chunks": corpus.n_chunks,
        "model": corpus.model,
        "dim": corpus.dim,
        "index_type": corpus.index_type,
        "text_search": corpus.has_text_index,
        "file_hash": corpus.file_hash,
        "content_hash": corpus.content_hash,
        "fields": corpus.fields(),
    }


def discover(paths: list[Path]) -> dict[str, Path]:
    """Name -> path: a .urna file by its stem, a collection folder by its name, and in any
    other folder every .urna file and every collection folder it holds."""
    found: dict[str, Path] = {}
    for path in paths:
        if is_collection(path):
            files = [path]
        elif path.is_dir():
            files = sorted(
                p
                for p in path.iterdir()
                if (p.suffix == ".urna" and p.is_file()) or is_collection(p)
            )
            if not files:
                raise FileError(f"no .urna files or collections in {path}")
        elif path.is_file():
            files = [path]
        else:
            raise FileError(f"file not found: {path}")
        for file in files:
            name = file.stem if file.is_file() else file.name
            if name in found:
                raise UrnaError(f"two databases are named {name!r}: {found[name]} and {file}")
            found[name] = file
    return found


def load(paths: list[Path]) -> Databases:
    """Open every file with the full check; any failure stops the server before it starts."""
    dbs = Databases()
    for name, path in discover(paths).items():
        dbs.corpora[name] = open_path(path, private=True)
    return dbs
