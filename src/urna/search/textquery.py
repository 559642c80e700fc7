"""One text query, start to finish, over anything that can rank text: a file or a collection.

The source supplies its model (through the gate), its fusion parameters, each method's
candidates under the query's filters, and hit assembly; this module does the rest the same
way for both: argument checks, the route, ranking and fusion, the result's header.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from urna.embed.base import Embedder
from urna.embed.gate import check_gate
from urna.errors import QueryError
from urna.search.fusion import FusionParams
from urna.search.order import SourceOf
from urna.search.query import check_k
from urna.search.result import FUSED_NOTE, Hit, SearchResult
from urna.search.text import TextTop, VectorTop, rank, route


@dataclass(frozen=True)
class Candidates:
    """Each method's candidates under one query's filters, and how many chunks they reach."""

    vector_top: VectorTop
    text_top: TextTop | None
    n_searched: int
    source_of: SourceOf | None = None  # for ties across shards (``search/order.py``)


class TextSource(Protocol):
    manifest: dict[str, Any]
    fusion: FusionParams

    @property
    def dim(self) -> int: ...

    @property
    def has_text_index(self) -> bool: ...

    def embedder(self, *, model_path: str | os.PathLike[str] | None = None) -> Embedder: ...

    def candidates(self, source: str | None, section: str | None) -> Candidates: ...

    def make_hits(
        self,
        idx: np.ndarray,
        scores: np.ndarray,
        *,
        index_type: str,
        score_type: str = "cosine",
        ranks: Sequence[dict[str, dict[str, float]]] | None = None,
        terms: Sequence[str] | None = None,
        reranked: bool = False,
        precision: str = "",
    ) -> list[Hit]: ...


def text_query(
    src: TextSource,
    text: str,
    k: int,
    *,
    mode: str,
    fusion: str | None,
    candidates: int | None,
    embedder: Embedder | None,
    model_path: str | os.PathLike[str] | None,
    source: str | None,
    section: str | None,
) -> SearchResult:
    k = check_k(k)
    if not isinstance(text, str) or not text.strip():
        raise QueryError("empty query")
    fusion = src.fusion.choose(fusion)
    where = src.candidates(source, section)

    def gated() -> Embedder:
        if embedder is None:
            return src.embedder(model_path=model_path)
        check_gate(embedder, src.manifest)
        return embedder

    explicit = embedder is not None or model_path is not None
    chosen = route(mode, has_bm25=src.has_text_index, embedder=gated, explicit=explicit)
    if chosen.embedder is not None:
        chosen.embedder.load()  # query_time covers embedding the query, not loading the model
    t0 = time.perf_counter()
    ranked = rank(
        text,
        k,
        route=chosen,
        dim=src.dim,
        vector_top=where.vector_top,
        text_top=where.text_top,
        fusion=fusion,
        params=src.fusion,
        candidates=candidates,
        source_of=where.source_of,
    )
    index_type = "exact" if chosen.mode == "vector" else chosen.mode
    hits = src.make_hits(
        ranked.ordinals,
        ranked.scores,
        index_type=index_type,
        score_type=ranked.score_type,
        ranks=ranked.ranks,
        terms=ranked.query_tokens or text.split(),
    )
    elapsed = (time.perf_counter() - t0) * 1000
    exact = chosen.mode != "hybrid"  # vector and text score every chunk; fusion ranks
    return SearchResult(
        index_type,
        1.0 if exact else None,
        k,
        where.n_searched,
        elapsed,
        hits,
        mode=chosen.mode,
        candidates=ranked.candidates,
        note=chosen.note,
        recall_note=None if exact else FUSED_NOTE,
    )


class TextSearching:
    """``search_text`` for any ``TextSource`` (a file, a collection): one definition."""

    def search_text(
        self,
        text: str,
        k: int = 10,
        *,
        mode: str = "auto",
        fusion: str | None = None,
        candidates: int | None = None,
        embedder: Embedder | None = None,
        model_path: str | os.PathLike[str] | None = None,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult:
        """Search by text: BM25, the corpus's own model (through the gate), or both fused.

        ``mode``: ``text`` (BM25 only, no model), ``vector``, ``hybrid``, or ``auto``
        (hybrid when there is BM25 and the model can embed the query). ``fusion``:
        ``calibrated`` or ``rrf`` (default: the recorded choice). ``source`` (a glob on
        source_uri) and ``section`` (a section-path prefix) filter before ranking.
        """
        src: TextSource = self  # type: ignore[assignment]
        return text_query(
            src,
            text,
            k,
            mode=mode,
            fusion=fusion,
            candidates=candidates,
            embedder=embedder,
            model_path=model_path,
            source=source,
            section=section,
        )
