"""One shard as a collection sees it: a few facts and the calls a merge needs.

``LocalShard`` answers from an open file in this process; the Ray Serve deployment
(``server/ray_serve.py``) answers the same calls from another process or node. Every call
takes and returns plain data (arrays, hits, chunks), never an open file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from urna.format.audit import AuditReport
from urna.index.bm25 import GlobalScorer, TermStats, positive_top
from urna.search.chunks import Chunk
from urna.search.corpus import Corpus
from urna.search.fusion import FusionParams
from urna.search.result import Hit, SearchResult

Pair = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class ShardFacts:
    name: str
    n_chunks: int
    content_hash: str
    file_hash: str
    manifest: dict[str, Any]
    fusion: FusionParams
    has_text_index: bool
    has_ann_index: bool
    has_graph_index: bool
    index_type: str


class Shard(Protocol):
    facts: ShardFacts

    def vector_top(
        self, q: np.ndarray, depth: int, source: str | None, section: str | None
    ) -> Pair: ...

    def count(self, source: str | None, section: str | None) -> int: ...

    def term_stats(self, tokens: Sequence[str]) -> TermStats: ...

    def text_top(
        self,
        tokens: Sequence[str],
        stats: TermStats,
        depth: int,
        source: str | None,
        section: str | None,
    ) -> Pair: ...

    def make_hits(self, idx: np.ndarray, scores: np.ndarray, **kwargs: Any) -> list[Hit]: ...

    def search(self, method: str, **kwargs: Any) -> SearchResult: ...

    def chunk(self, i: int) -> Chunk: ...

    def source_uris(self, idx: np.ndarray) -> list[str]: ...

    def embedding(self, i: int) -> np.ndarray: ...

    def cite(self, citation: str) -> Chunk: ...

    def verify_source(self, chunk: Chunk, root: str | None) -> Path: ...

    def info(self) -> dict[str, Any]: ...

    def validate(self) -> AuditReport: ...

    def holdings(self) -> tuple[list[str], list[str]]: ...

    def close(self) -> None: ...


SEARCHES = ("search_ann", "search_graph", "search_space")


class LocalShard:
    """A shard answered from an open file in this process."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self._scorer = GlobalScorer(corpus.bm25) if corpus.bm25 is not None else None
        self.facts = ShardFacts(
            name=corpus.path.name,
            n_chunks=corpus.n_chunks,
            content_hash=corpus.content_hash,
            file_hash=corpus.file_hash,
            manifest=dict(corpus.manifest),
            fusion=corpus.fusion,
            has_text_index=corpus.has_text_index,
            has_ann_index=corpus.has_ann_index,
            has_graph_index=corpus.has_graph_index,
            index_type=corpus.index_type,
        )

    def vector_top(
        self, q: np.ndarray, depth: int, source: str | None, section: str | None
    ) -> Pair:
        return self.corpus.candidates_vector(q, depth, self.corpus.filtered(source, section))

    def count(self, source: str | None, section: str | None) -> int:
        allowed = self.corpus.filtered(source, section)
        return self.corpus.n_chunks if allowed is None else len(allowed)

    def term_stats(self, tokens: Sequence[str]) -> TermStats:
        assert self._scorer is not None
        return self._scorer.stats(tokens)

    def text_top(
        self,
        tokens: Sequence[str],
        stats: TermStats,
        depth: int,
        source: str | None,
        section: str | None,
    ) -> Pair:
        assert self._scorer is not None
        scores = self._scorer.scores(tokens, stats)
        idx = positive_top(scores, depth, self.corpus.filtered(source, section))
        return idx, scores[idx]

    def make_hits(self, idx: np.ndarray, scores: np.ndarray, **kwargs: Any) -> list[Hit]:
        return self.corpus.make_hits(idx, scores, **kwargs)

    def search(self, method: str, **kwargs: Any) -> SearchResult:
        if method not in SEARCHES:
            raise ValueError(f"not a shard search: {method}")
        result: SearchResult = getattr(self.corpus, method)(**kwargs)
        return result

    def chunk(self, i: int) -> Chunk:
        return self.corpus.chunk(i)

    def source_uris(self, idx: np.ndarray) -> list[str]:
        return self.corpus.source_uris(idx)

    def embedding(self, i: int) -> np.ndarray:
        return self.corpus.embedding(i)

    def cite(self, citation: str) -> Chunk:
        return self.corpus.cite(citation)

    def verify_source(self, chunk: Chunk, root: str | os.PathLike[str] | None) -> Path:
        return self.corpus.verify_source(chunk, root)

    def info(self) -> dict[str, Any]:
        return self.corpus.info()

    def validate(self) -> AuditReport:
        return self.corpus.validate()

    def holdings(self) -> tuple[list[str], list[str]]:
        """Every chunk id and every chunk's source_uri, in file order (for the audit)."""
        n = self.corpus.n_chunks
        return [self.corpus.chunk_id(i) for i in range(n)], self.corpus.source_uris(np.arange(n))

    def close(self) -> None:
        self.corpus.close()
