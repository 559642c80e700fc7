"""The narrow interface the core (``search/core.py``) searches through: one shard.

A single .urna file is a collection of one shard. ``FileShard`` (``search/fileshard.py``)
answers from an open file in this process; the Ray Serve deployment
(``server/ray_serve.py``) answers the same calls from another process or node. Every call
takes and returns plain data (arrays, filters, hits, chunks), never an open file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from urna.format.audit import AuditReport
from urna.format.chunks import Chunk
from urna.format.fusion import FusionParams
from urna.index.bm25_global import TermStats
from urna.search.facets import Counts
from urna.search.filters import Filter
from urna.search.result import Hit
from urna.search.where import Schema

Pair = tuple[np.ndarray, np.ndarray]


RERANK_FACTOR = 2  # HNSW candidates reranked per query: this times max(ef, k) (measured)


@dataclass(frozen=True)
class ShardFacts:
    name: str
    n_chunks: int
    dim: int
    model: str
    manifest: dict[str, Any]
    fusion: FusionParams
    tokenizer: str | None  # the BM25 index's tokenizer, None without one
    has_text_index: bool
    has_ann_index: bool
    has_graph_index: bool
    index_type: str
    deleted: int = 0  # chunks the collection's catalog deletes from this file
    languages: tuple[str, ...] = ()  # under tokenizer version 5, those its chunks are read in

    @property
    def live(self) -> int:
        return self.n_chunks - self.deleted


@dataclass(frozen=True)
class Ranking:
    """A shard's own ranked answer on the HNSW, graph and space paths."""

    ordinals: np.ndarray
    scores: np.ndarray
    index_type: str  # what ran: exact (a fallback or a filter), hnsw, graph, space
    precision: str = ""
    model: str = ""  # the space's model, on the space path


@dataclass(frozen=True)
class HitSpec:
    """How ranked ordinals become hits (the same for every shard of one query)."""

    index_type: str
    score_type: str = "cosine"
    reranked: bool = False
    precision: str = ""
    model: str = ""
    terms: Sequence[str] | None = None
    ranks: Sequence[dict[str, dict[str, float]]] | None = field(default=None)
    # A collection's shard makes its hits in place: each hit's rank in the whole answer
    # (by default 1, 2, ...) and the shard's first collection ordinal.
    at: Sequence[int] | None = None
    offset: int = 0

    def part(self, where: list[int], offset: int) -> HitSpec:
        """This spec for one shard's hits, at positions ``where`` of the answer (what
        ``dataclasses.replace`` gives, without its look at every field: a query's hits come
        from up to 16 shards)."""
        ranks = None if self.ranks is None else [self.ranks[j] for j in where]
        at = [j + 1 for j in where]
        return HitSpec(
            self.index_type,
            self.score_type,
            self.reranked,
            self.precision,
            self.model,
            self.terms,
            ranks,
            at,
            offset,
        )


class Shard(Protocol):
    """``facts`` are known at open; the hashes may be computed on first use (a file's are)."""

    facts: ShardFacts
    remote: bool  # answered by another process (the core asks such shards in parallel)

    @property
    def content_hash(self) -> str: ...

    @property
    def file_hash(self) -> str: ...

    def schema(self) -> Schema: ...

    def count(self, kept: Filter | None) -> int: ...

    def facet_counts(self, names: Sequence[str], ordinals: np.ndarray) -> Counts: ...

    def vector_top(self, q: np.ndarray, depth: int, kept: Filter | None) -> Pair: ...

    def ann_top(self, q: np.ndarray, k: int, ef: int, kept: Filter | None) -> Ranking: ...

    def graph_top(
        self, q: np.ndarray, k: int, hops: int, ef: int, kept: Filter | None
    ) -> Ranking: ...

    def space_top(
        self, vector: np.ndarray, space: str, k: int, expect: str | None, kept: Filter | None
    ) -> Ranking: ...

    def term_stats(self, tokens: Sequence[str]) -> TermStats: ...

    def text_top(
        self, tokens: Sequence[str], stats: TermStats | None, depth: int, kept: Filter | None
    ) -> Pair: ...

    def scores_at(
        self, q: np.ndarray, tokens: Sequence[str], stats: TermStats | None, rows: Pair
    ) -> Pair: ...

    def make_hits(self, idx: np.ndarray, scores: np.ndarray, spec: HitSpec) -> list[Hit]: ...

    def source_uris(self, idx: np.ndarray) -> list[str]: ...

    def embeddings(self, idx: np.ndarray) -> np.ndarray:
        """The stored vectors of these ordinals, float32 rows (one call for them all)."""

    def live_ordinals(self) -> np.ndarray:
        """The ordinals of the chunks that count, ascending (a catalog may delete some)."""

    def chunk(self, i: int) -> Chunk: ...

    def embedding(self, i: int) -> np.ndarray: ...

    def cite(self, citation: str) -> Chunk: ...

    def verify_source(self, chunk: Chunk, root: str | None) -> Path: ...

    def info(self) -> dict[str, Any]: ...

    def validate(self) -> AuditReport: ...

    def holdings(self) -> tuple[list[str], list[str]]: ...

    def retired(self, ranges: Sequence[tuple[int, int]]) -> Shard:
        """The same file with a collection version's deleted chunk ranges."""
        ...

    def close(self) -> None: ...
