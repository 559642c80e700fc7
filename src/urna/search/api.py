"""The public search methods of ``Corpus`` and ``Collection``, written once: each builds a
``Query`` and runs it through the core (``search/core.py``). ``run`` takes a ``Query`` as is:
the shells (CLI, HTTP, MCP, integrations) call it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from urna.embed.base import Embedder
from urna.search.core import Searcher
from urna.search.request import Query
from urna.search.result import SearchResult

Vector = Sequence[float] | np.ndarray
Where = str | Mapping[str, Any] | None


class SearchAPI:
    """Search by vector or by text; every method filters before ranking: ``source`` (a path
    pattern as .gitignore reads it, e.g. ``taxes*`` or ``docs/**/*.md``), ``section`` (a
    section-path prefix) and ``where`` (a where-filter on metadata, e.g.
    ``{"year": {"$gte": 2020}}``; ``search/where.py``)."""

    _searcher: Searcher

    def run(self, query: Query) -> SearchResult:
        """Run one query value (``urna.Query``) through the core."""
        return self._searcher.run(query)

    def fields(self) -> dict[str, dict[str, int]]:
        """Every metadata field, with how many chunks hold each of its types."""
        return self._searcher.schema()

    def embedder(self, *, model_path: str | os.PathLike[str] | None = None) -> Embedder:
        """This corpus's own model (loaded once per process), after the model gate."""
        return self._searcher.embedder(model_path)

    def search(
        self,
        query: Vector,
        k: int = 10,
        *,
        source: str | None = None,
        section: str | None = None,
        where: Where = None,
    ) -> SearchResult:
        """Exact cosine search: every chunk kept scored, top ``k``, ties by source then
        position."""
        return self.run(
            Query(vector=query, k=k, method="exact", source=source, section=section, where=where)
        )

    def search_ann(
        self,
        query: Vector,
        k: int = 10,
        *,
        ef: int = 100,
        source: str | None = None,
        section: str | None = None,
        where: Where = None,
    ) -> SearchResult:
        """HNSW candidates (at least max(ef, k)) reranked by exact cosine; exact without
        HNSW or with a filter (a filtered search is exact over the chunks kept)."""
        return self.run(
            Query(
                vector=query, k=k, method="ann", ef=ef, source=source, section=section, where=where
            )
        )

    def search_graph(
        self,
        query: Vector,
        k: int = 10,
        *,
        hops: int = 1,
        ef: int = 100,
        source: str | None = None,
        section: str | None = None,
        where: Where = None,
    ) -> SearchResult:
        """Seeds from exact, expanded over the chunk graph, reranked: the same hits as
        search (exact without a graph, or with a filter)."""
        return self.run(
            Query(
                vector=query,
                k=k,
                method="graph",
                hops=hops,
                ef=ef,
                source=source,
                section=section,
                where=where,
            )
        )

    def search_space(
        self,
        query: Vector,
        space: str,
        k: int = 10,
        *,
        expect_model_hash: str | None = None,
        source: str | None = None,
        section: str | None = None,
        where: Where = None,
    ) -> SearchResult:
        """Exact search over one named embedding space; never falls back to another."""
        return self.run(
            Query(
                vector=query,
                k=k,
                method="space",
                space=space,
                expect_model_hash=expect_model_hash,
                source=source,
                section=section,
                where=where,
            )
        )

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
        where: Where = None,
    ) -> SearchResult:
        """Search by text: BM25, the corpus's own model (through the gate), or both fused.

        ``mode``: ``text`` (BM25 only, no model), ``vector``, ``hybrid``, or ``auto``
        (hybrid when there is BM25 and the model can embed the query). ``fusion``:
        ``calibrated`` or ``rrf`` (default: the recorded choice).
        """
        return self.run(
            Query(
                text=text,
                k=k,
                method="text",
                mode=mode,
                fusion=fusion,
                candidates=candidates,
                embedder=embedder,
                model_path=model_path,
                source=source,
                section=section,
                where=where,
            )
        )
