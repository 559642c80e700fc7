"""``urna.open``: a verified .urna file you can search, cite and inspect.

``Corpus`` is a file (``FileShard``: the container, its indexes, and the shard calls) with
the public search methods (``SearchAPI``) run by the core over that one shard: a file is a
collection of one shard, and every path runs the same code for both.
"""

from __future__ import annotations

import os

from urna.format.reader import Container, Verify
from urna.search.api import SearchAPI, Vector
from urna.search.core import Searcher
from urna.search.fileshard import RERANK_FACTOR, FileShard


class Corpus(FileShard, SearchAPI):
    """A .urna file opened for reading. Create it with :func:`urna.open`."""

    def __init__(self, container: Container) -> None:
        super().__init__(container)
        self._searcher = Searcher([self])

    def close(self) -> None:
        self._searcher.close()
        super().close()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<urna.Corpus {self.path} chunks={self.n_chunks} dim={self.dim} model={self.model}>"


def open_corpus(
    path: str | os.PathLike[str], *, verify: Verify = "full", private: bool = False
) -> Corpus:
    """Open and check a .urna file.

    ``verify="full"`` (default) runs every check of the format, hashes included;
    ``verify="trusted"`` runs the structural checks only, for a caller that fully
    verified this same file before.
    """
    return Corpus(Container(path, verify=verify, private=private))


def open_shard(
    path: str | os.PathLike[str], *, verify: Verify = "full", private: bool = False
) -> FileShard:
    """A file opened as one shard of a collection (no search methods of its own)."""
    return FileShard(Container(path, verify=verify, private=private))


__all__ = ["RERANK_FACTOR", "Corpus", "Vector", "open_corpus", "open_shard"]
