"""One open .urna file as the core searches it: the shard calls of ``search/shard.py``.

The container (``format/``) checks and maps the file, each index (``index/``) loads itself
from it; this class answers each call from them: the exact top of a prepared vector, the
HNSW and graph paths with their exact rerank, one embedding space, BM25 under the file's own
or a collection's statistics, the chunks a filter keeps, and hits with their citations.
``Corpus`` is this class with the public search methods (``search/api.py``) on top.

A collection's catalog may delete chunks of a file (``retire``): every call then answers
over the live chunks only, BM25 with the statistics of live chunks, as a file holding only
them would.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from urna.errors import (
    ForeignCitationError,
    FormatError,
    NotFoundError,
    QueryError,
)
from urna.format.audit import AuditReport, audit
from urna.format.chunks import Chunk, ChunkStore
from urna.format.embeddings import Matrix
from urna.format.fusion import FusionParams
from urna.format.layout import Encoding
from urna.format.reader import Container
from urna.index.bm25 import load_bm25, positive_top, scores_at
from urna.index.bm25_global import GlobalScorer, TermStats
from urna.index.exact import exact_top_k, load_rerank_matrix, rerank_top, scanned
from urna.index.graph import load_graph
from urna.index.hnsw import load_hnsw
from urna.index.mixed import FIELD, languages_of
from urna.index.rowscore import row_scores
from urna.index.tokenize import PER_DOCUMENT
from urna.index.topk import top_k
from urna.search.cite import Citation, check_source, extractors_of, parse_citation, roots_of
from urna.search.derived import audit_derived
from urna.search.facets import Counts
from urna.search.filters import Filter, FilterIndex
from urna.search.hits import HitMaker
from urna.search.info import FileView
from urna.search.metadata import FieldColumns
from urna.search.query import prepare
from urna.search.result import Hit
from urna.search.shard import RERANK_FACTOR, HitSpec, Pair, Ranking, ShardFacts
from urna.search.where import Schema
from urna.search.words import Readers, words_of

Stats = TermStats | None  # a collection's statistics, or None for the file's own


class FileShard(FileView):
    """A .urna file opened for searching (``Corpus`` adds the public methods)."""

    remote = False

    def __init__(self, container: Container) -> None:
        super().__init__(container)
        self.fusion = FusionParams.from_manifest(self.manifest)
        self._bm25 = load_bm25(container)
        self._hnsw, self._graph = load_hnsw(container), load_graph(container)
        self._rerank = load_rerank_matrix(container)
        self._store = ChunkStore(container)
        self._columns = FieldColumns(self._store, container.chunk_fields)
        read = Readers(self._bm25.tokenizer if self._bm25 is not None else None, self._columns)
        self._filters = FilterIndex(self._columns, words_of(self._store, read, self._bm25))
        self.hit_maker = HitMaker.of(self._store, self._columns, self.model, self._c, read)
        self._scorer: GlobalScorer | None = None
        self._dead: np.ndarray | None = None  # chunks deleted (a bool mask), None for none
        self._live: np.ndarray | None = None  # their complement, as sorted ordinals
        self._live_bm25: tuple[int, float] | None = None
        self._schema: Schema | None = None  # of the live chunks, when some are deleted
        self.facts = facts_of(self, self._bm25.tokenizer if self._bm25 is not None else None)

    def retired(self, ranges: Sequence[tuple[int, int]]) -> FileShard:
        """A view of this open file with these chunks deleted (nothing re-read): the next
        version of a collection shares its unchanged files with the one still answering."""
        view = copy.copy(self)
        view._dead, view._live, view._live_bm25, view._schema = None, None, None, None
        view.facts = replace(self.facts, deleted=0)
        view.retire(ranges)
        return view

    def retire(self, ranges: Sequence[tuple[int, int]]) -> None:
        """Delete the chunks in these [lo, hi) ranges from every answer (at open)."""
        dead = np.zeros(self.n_chunks, dtype=bool)
        for lo, hi in ranges:
            dead[lo:hi] = True
        if not dead.any():
            return
        self._dead = dead
        self._live = np.flatnonzero(~dead)
        self._live.flags.writeable = False
        if self._bm25 is not None:
            self._live_bm25 = (len(self._live), self._global().live_length(dead))
        self.facts = replace(self.facts, deleted=int(dead.sum()))

    # --- chunks --------------------------------------------------------------

    def chunk_id(self, i: int) -> str:
        return self._store.chunk_id(i)

    def chunk(self, i: int) -> Chunk:
        return self._store.chunk(i)

    def fields_of(self, i: int) -> dict[str, Any]:
        """Chunk ``i``'s stored metadata fields."""
        return self._columns.record(i)

    def source_uris(self, idx: np.ndarray) -> list[str]:
        """The source_uri of each of these ordinals (no text decoded)."""
        return self._store.source_uris_of(idx)

    def embeddings(self, idx: np.ndarray) -> np.ndarray:
        """The rows of these ordinals as stored, dequantized to float32."""
        at = np.asarray(idx, dtype=np.int64)
        return self._c.matrix.rows(at).reshape(len(at), self.dim)

    def live_ordinals(self) -> np.ndarray:
        """The ordinals of the chunks that count, ascending (a catalog may delete some)."""
        return np.arange(self.n_chunks) if self._live is None else self._live

    def text_bytes(self, i: int) -> bytes:
        return self._store.text_bytes(i)

    def embedding(self, i: int) -> np.ndarray:
        """Row i as stored, dequantized to float32."""
        return self._c.matrix.rows(slice(i, i + 1))[0]

    def find(self, chunk_id: str) -> int | None:
        """The ordinal of a chunk id, or None."""
        return self._store.find(chunk_id)

    def holdings(self) -> tuple[list[str], list[str]]:
        """Every chunk id and every chunk's source_uri, in file order (for the audit)."""
        n = self.n_chunks
        return [self.chunk_id(i) for i in range(n)], self.source_uris(np.arange(n))

    # --- the shard calls -------------------------------------------------------

    def schema(self) -> Schema:
        if self._dead is None:
            return self._columns.schema
        if self._schema is None:
            self._schema = self._columns.schema_of(self._dead)
        return self._schema

    def filtered(self, kept: Filter | None) -> np.ndarray | None:
        """Sorted live ordinals the filter keeps (None: no filter, every chunk)."""
        allowed = self._filters.allowed(kept)
        if self._dead is None:
            return allowed
        return self._live if allowed is None else allowed[~self._dead[allowed]]

    def facet_counts(self, names: Sequence[str], ordinals: np.ndarray) -> Counts:
        return {name: self._columns.counts(name, ordinals) for name in names}

    def count(self, kept: Filter | None) -> int:
        allowed = self.filtered(kept)
        return self.n_chunks if allowed is None else len(allowed)

    def is_live(self, i: int) -> bool:
        """Whether chunk ``i`` counts (the collection's catalog may delete it)."""
        return self._dead is None or not bool(self._dead[i])

    def vector_top(self, q: np.ndarray, depth: int, kept: Filter | None) -> Pair:
        """The exact top ``depth`` for a prepared query, among the chunks kept."""
        matrix = self._c.matrix
        return exact_top_k(matrix, q, min(depth, matrix.n), self.filtered(kept))

    def vector_scan(
        self, q: np.ndarray, depth: int, kept: Filter | None
    ) -> tuple[np.ndarray, np.ndarray, float] | None:
        """The float32 scan's candidates for the top ``depth`` (``index/exact.py``'s
        ``scanned``), not yet scored exactly; None for a quantized matrix (its own kernels)."""
        matrix = self._c.matrix
        if matrix.encoding != Encoding.RAW:
            return None
        return scanned(matrix, q, min(depth, matrix.n), self.filtered(kept))

    def ann_top(self, q: np.ndarray, k: int, ef: int, kept: Filter | None) -> Ranking:
        """HNSW candidates (at least max(ef, k)) reranked by exact cosine; exact without HNSW
        or with a filter (a filtered search is exact over the chunks the filter keeps)."""
        found = self.ann_candidates(q, k, ef, kept)
        if found is None:
            return Ranking(*self.vector_top(q, k, kept), "exact")
        rows, matrix = self.rerank_rows(found[0])
        scores = row_scores(matrix, rows, q)
        best = top_k(scores, k)  # ties in file order
        return Ranking(rows[best], scores[best], "hnsw", precision=matrix.dtype)

    def ann_candidates(
        self, q: np.ndarray, k: int, ef: int, kept: Filter | None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The graph's live candidates with its distances (nearest first); None where this
        shard answers exactly instead: no graph, a filter, or a graph that cannot offer k
        candidates (a forged or cut one, or one whose chunks deletions took)."""
        if self._hnsw is None or kept is not None:
            return None
        # Twice max(ef, k) candidates: the int8 graph's order is approximate, the rerank exact.
        wanted = min(RERANK_FACTOR * max(ef, k) + self.facts.deleted, self.n_chunks)
        candidates, distances = self._hnsw.nearest(q, wanted, wanted)
        if len(np.unique(candidates)) < min(k, self.n_chunks):
            return None
        if self._dead is not None:
            alive = ~self._dead[candidates]
            candidates, distances = candidates[alive], distances[alive]
            if len(np.unique(candidates)) < min(k, self.facts.live):
                return None
        return candidates, distances

    def rerank_rows(self, candidates: np.ndarray) -> tuple[np.ndarray, Matrix]:
        """Distinct graph candidates (ascending) and the matrix that scores them exactly:
        the full-precision copy when the file keeps one (0x09), else the stored one."""
        return np.unique(candidates), self._rerank

    def graph_top(self, q: np.ndarray, k: int, hops: int, ef: int, kept: Filter | None) -> Ranking:
        """Seeds from exact, expanded over the chunk graph, reranked: the same hits as the
        exact path (exact without a graph, or with a filter)."""
        if self._graph is None or kept is not None:
            return Ranking(*self.vector_top(q, k, kept), "exact")
        n_seeds = min(max(ef, k), self.facts.live)
        seeds, _ = exact_top_k(self._c.matrix, q, n_seeds, self._live)
        union = self._graph.expand(seeds, hops, max(8 * n_seeds, n_seeds))
        union = union if self._dead is None else union[~self._dead[union]]
        # Stored precision, as the exact path scores: so the hits equal search's.
        idx, scores = rerank_top(self._c.matrix, union, q, k)
        return Ranking(idx, scores, "graph")

    def space_top(
        self, vector: np.ndarray, space: str, k: int, expect: str | None, kept: Filter | None
    ) -> Ranking:
        """Exact search over one named embedding space; never falls back to another."""
        found = next((s for s in self._c.spaces if s.name == space), None)
        if found is None:
            raise QueryError(f"embedding space not found: {space}")
        if expect is not None and expect != found.model_hash:
            raise QueryError(
                f"model_hash mismatch: space {space} was built with {found.model_hash}, "
                f"expected {expect}"
            )
        q = prepare(vector, found.dim)
        matrix = self._c.space_matrix(found)
        idx, scores = exact_top_k(matrix, q, min(k, matrix.n), self.filtered(kept))
        return Ranking(idx, scores, "space", model=found.model)

    def term_stats(self, tokens: Sequence[str]) -> TermStats:
        return self._global().stats(tokens, self._dead, self._live_bm25)

    def text_top(
        self, tokens: Sequence[str], stats: TermStats | None, depth: int, kept: Filter | None
    ) -> Pair:
        """BM25's top ``depth`` (scores > 0) among the chunks kept: with the file's own
        statistics (``stats`` None), else with a collection's."""
        bm25 = self._bm25
        assert bm25 is not None
        if stats is None and self._dead is not None:
            stats = self.term_stats(tokens)  # the stored weights count deleted chunks
        scores = bm25.scores(tokens) if stats is None else self._global().scores(tokens, stats)
        idx = positive_top(scores, depth, self.filtered(kept), bm25.seed(tokens, depth))
        return idx, scores[idx]

    def scores_at(self, q: np.ndarray, tokens: Sequence[str], stats: Stats, rows: Pair) -> Pair:
        """Each method's own score of some chunks: the cosines of ``rows[0]`` and the BM25 of
        ``rows[1]`` (ascending ordinals; under a collection's ``stats``, or the file's), the
        bits ``vector_top`` and ``text_top`` give them (complete scores, ``search/fusion``)."""
        by_vector, by_text = rows
        if self._bm25 is not None and stats is None and self._dead is not None:
            stats = self.term_stats(tokens)  # as text_top: the stored weights count the dead
        if self._bm25 is None:
            bm25 = np.zeros(len(by_text), dtype=np.float32)
        elif stats is None:
            bm25 = scores_at(tokens, by_text, self._bm25.postings)
        else:
            bm25 = scores_at(tokens, by_text, partial(self._global().postings, stats=stats))
        return row_scores(self._c.matrix, by_vector, q), bm25

    def text_tables(self) -> tuple[GlobalScorer, np.ndarray | None]:
        """This file's BM25 tables and its deleted chunks (a mask, or None): a collection
        reads every shard's postings of a term and weighs them again under its statistics
        (``search/postings.py``)."""
        return self._global(), self._dead

    def _global(self) -> GlobalScorer:
        if self._bm25 is None:
            raise QueryError("this file has no BM25 index (section 0x08)")
        if self._scorer is None:
            self._scorer = GlobalScorer(self._bm25)
        return self._scorer

    def make_hits(self, idx: np.ndarray, scores: np.ndarray, spec: HitSpec) -> list[Hit]:
        """Hits for ranked ordinals of this file (with their citations and snippets)."""
        return self.hit_maker(idx, scores, spec)

    # --- citations -----------------------------------------------------------

    def cite(self, citation: str | Citation) -> Chunk:
        """Resolve a citation in this file; its content_hash must be this file's."""
        cit = parse_citation(citation) if isinstance(citation, str) else citation
        if cit.content_hash != self.content_hash:
            raise ForeignCitationError(
                f"content_hash mismatch: the citation names {cit.content_hash}, "
                f"this file has {self.content_hash}"
            )
        i = self.find(cit.chunk_id)
        if i is None:
            raise NotFoundError(f"chunk not found: {cit.chunk_id}")
        return self.chunk(i)

    def source_roots(self) -> list[Path]:
        """Every folder the build named sources relative to, resolved next to this file."""
        return roots_of(self._c.provenance, self.path.resolve().parent)

    def verify_source(self, chunk: Chunk, root: str | os.PathLike[str] | None = None) -> Path:
        """Check that the source's bytes in the chunk's span equal its stored text.

        Relative source_uris are resolved against ``root``, by default the build's source
        roots (recorded in provenance) or the folder holding this .urna file. For derived
        formats (HTML, PDF, DOCX, JSONL and CSV records) the span indexes the extracted
        text: the source is read and extracted again, by the extractors the file was built
        with. Returns the path read.
        """
        roots = [Path(root)] if root is not None else self.source_roots()
        expected = self.text_bytes(chunk.ordinal)
        extractors = extractors_of(self._c.provenance)
        return check_source(
            chunk.source_uri, chunk.byte_start, chunk.byte_end, expected, roots, extractors
        )

    # --- the whole picture -----------------------------------------------------

    def info(self) -> dict[str, Any]:
        """Everything ``urna stats`` and ``urna inspect --json`` show, the fields included."""
        try:
            fields: dict[str, Any] = {"fields": self.schema()}
        except FormatError as exc:  # a forged 0x11: the file's facts are still shown
            fields = {"fields_error": str(exc)}
        return {**super().info(), **fields}

    def validate(self) -> AuditReport:
        """Recompute every chunk id, check they are unique, walk every vector for NaN/Inf and
        norm, check each derived section against what it derives from
        (``search/derived.py``), and parse every metadata record."""
        report = audit(self._c)
        audit_derived(self._c, self._store, self._bm25, self._hnsw, self._graph)
        if self._c.chunk_fields is not None:
            _ = self._c.chunk_fields.records
        return report

    def close(self) -> None:
        self._c.close()


def facts_of(view: FileShard, tokenizer: str | None) -> ShardFacts:
    """What a collection knows of an open file without asking it again."""
    return ShardFacts(
        name=view.path.name,
        n_chunks=view.n_chunks,
        dim=view.dim,
        model=view.model,
        manifest=dict(view.manifest),
        fusion=view.fusion,
        tokenizer=tokenizer,
        has_text_index=view.has_text_index,
        has_ann_index=view.has_ann_index,
        has_graph_index=view.has_graph_index,
        index_type=view.index_type,
        languages=_languages(view) if tokenizer == PER_DOCUMENT else (),
    )


def _languages(view: FileShard) -> tuple[str, ...]:
    """The languages a file's chunks are read in under version 5 (``index/mixed.py``)."""
    return languages_of(view._columns.column(FIELD)[0] or [None])
