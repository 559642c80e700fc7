"""The databases a server answers for: .urna files named by their stem, verified once at start."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urna.errors import FileError, UrnaError
from urna.format.catalog import is_collection
from urna.search.opening import open_path
from urna.search.protocol import Searchable


@dataclass
class Databases:
    """Name -> open corpus. Swapping a name's corpus is atomic for readers (one dict store)."""

    corpora: dict[str, Searchable] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, name: str) -> Searchable | None:
        return self.corpora.get(name)

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
