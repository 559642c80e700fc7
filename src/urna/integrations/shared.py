"""What urna's framework retrievers share: their settings, the corpus they open, and the
metadata a hit carries into a framework's document or node."""

from __future__ import annotations

import threading
from typing import Any

from urna import library
from urna.errors import QueryError
from urna.search.opening import open_path
from urna.search.protocol import Searchable
from urna.search.request import MODES, query_from
from urna.search.result import Hit

SETTINGS = ("k", "mode", "fusion", "source", "section", "where")  # the Query parts they set


def check_settings(path: str | None, corpus_name: str | None, k: int, mode: str) -> None:
    if (path is None) == (corpus_name is None):
        raise ValueError("give exactly one of path (a .urna file or folder) or corpus_name")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


class Target:
    """The file or collection at ``path``, or the library's corpus ``corpus_name``, opened
    (with every check) on first use; thread-safe."""

    def __init__(self, path: str | None, corpus_name: str | None) -> None:
        self.path, self.corpus_name = path, corpus_name
        self._corpus: Searchable | None = None
        self._lock = threading.Lock()

    @property
    def corpus(self) -> Searchable:
        with self._lock:
            if self._corpus is None:
                name, path = self.corpus_name, self.path
                self._corpus = open_path(library.resolve(str(name)) if path is None else path)
            return self._corpus

    def close(self) -> None:
        with self._lock:
            if self._corpus is not None:
                self._corpus.close()
                self._corpus = None


def hits(retriever: Any, target: Target, query: str, overrides: dict[str, Any]) -> list[Hit]:
    """A retriever's query: its settings (``SETTINGS``, read off it), some overridden for
    this call."""
    unknown = set(overrides) - set(SETTINGS)
    if unknown:
        raise QueryError(f"unknown retriever arguments: {', '.join(sorted(unknown))}")
    settings = {name: getattr(retriever, name) for name in SETTINGS} | overrides
    return target.corpus.run(query_from(text=query, **settings)).hits


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """Everything to cite and check a hit: the citation, source and span, section path,
    page, hashes, rank and scores (each method's on a fused hit), and its own metadata."""
    return {
        "citation_id": hit.citation_id,
        "source": hit.source_uri,
        "byte_start": hit.byte_start,
        "byte_end": hit.byte_end,
        "section_path": hit.section_path,
        "page": hit.page,
        "chunk_id": hit.chunk_id,
        "content_hash": hit.content_hash,
        "file_hash": hit.file_hash,
        "rank": hit.rank,
        "score": hit.score,
        "score_type": hit.score_type,
        "ranks": hit.ranks,
        "model": hit.model,
        "fields": hit.metadata,  # the chunk's own metadata (front matter, record fields)
    }
