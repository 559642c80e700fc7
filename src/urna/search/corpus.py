"""``urna.open``: a verified .urna file you can search, cite and inspect.

``Corpus`` is a facade: the container (``format/``) checks and maps the file, each index
(``index/``) loads itself from it, and the search paths, fusion, filters and hit assembly
live beside this module. Every shell (CLI, HTTP, evaluation) calls these methods.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from urna.embed.base import Embedder
from urna.embed.gate import check_gate
from urna.embed.registry import resolve_query
from urna.errors import CitationError, QueryError
from urna.format.audit import AuditReport, audit
from urna.format.reader import Container, Verify
from urna.index.bm25 import load_bm25
from urna.index.exact import exact_top_k, load_rerank_matrix, rerank_top
from urna.index.graph import load_graph
from urna.index.hnsw import load_hnsw
from urna.search.chunks import Chunk, ChunkStore
from urna.search.cite import Citation, check_source, parse_citation
from urna.search.derived import audit_derived
from urna.search.filters import FilterIndex, make_filter
from urna.search.fusion import FusionParams
from urna.search.hits import HitMaker
from urna.search.info import FileView
from urna.search.query import check_k, check_positive, prepare
from urna.search.result import RERANK_NOTE, Hit, SearchResult
from urna.search.textquery import Candidates, TextSearching

RERANK_FACTOR = 2  # HNSW candidates reranked per query: this times max(ef, k) (measured)
Vector = Sequence[float] | np.ndarray


class Corpus(FileView, TextSearching):
    """A .urna file opened for reading. Create it with :func:`urna.open`."""

    def __init__(self, container: Container) -> None:
        super().__init__(container)
        self.fusion = FusionParams.from_manifest(self.manifest)
        self._bm25 = load_bm25(container)
        self._hnsw = load_hnsw(container)
        self._graph = load_graph(container)
        self._rerank = load_rerank_matrix(container)
        self._store = ChunkStore(container)
        self._filters = FilterIndex(self._store)
        self._hits = HitMaker(self._store, self.model, lambda: self._c.file_hash)

    # --- chunks --------------------------------------------------------------

    def chunk_id(self, i: int) -> str:
        return self._store.chunk_id(i)

    def chunk(self, i: int) -> Chunk:
        return self._store.chunk(i)

    def source_uris(self, idx: np.ndarray) -> list[str]:
        """The source_uri of each of these ordinals (no text decoded)."""
        return self._store.source_uris_of(idx)

    def text_bytes(self, i: int) -> bytes:
        return self._store.text_bytes(i)

    def embedding(self, i: int) -> np.ndarray:
        """Row i as stored, dequantized to float32."""
        return self._c.matrix.rows(slice(i, i + 1))[0]

    def find(self, chunk_id: str) -> int | None:
        """The ordinal of a chunk id, or None."""
        return self._store.find(chunk_id)

    # --- vector paths ----------------------------------------------------------

    def _allowed(self, source: str | None, section: str | None) -> np.ndarray | None:
        return self._filters.allowed(make_filter(source, section))

    def _searched(self, allowed: np.ndarray | None) -> int:
        return self.n_chunks if allowed is None else len(allowed)

    def search(
        self, query: Vector, k: int = 10, *, source: str | None = None, section: str | None = None
    ) -> SearchResult:
        """Exact cosine search: every chunk scored (or every chunk the filters keep: a glob on
        ``source`` and a section-path prefix ``section``), top ``k``, ties in file order."""
        t0 = time.perf_counter()
        k = check_k(k)
        q = prepare(query, self.dim)
        allowed = self._allowed(source, section)
        idx, scores = exact_top_k(self._c.matrix, q, k, allowed)
        hits = self._hits(idx, scores, index_type="exact", reranked=False)
        elapsed = (time.perf_counter() - t0) * 1000
        return SearchResult("exact", 1.0, k, self._searched(allowed), elapsed, hits)

    def search_ann(
        self,
        query: Vector,
        k: int = 10,
        *,
        ef: int = 100,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult:
        """HNSW candidates (at least max(ef, k)) reranked by exact cosine; exact without HNSW
        or with a filter (a filtered search is exact over the chunks the filter keeps)."""
        ef = check_positive(ef, "ef")
        if self._hnsw is None or make_filter(source, section) is not None:
            return self.search(query, k, source=source, section=section)
        t0 = time.perf_counter()
        k = check_k(k)
        q = prepare(query, self.dim)
        # Twice max(ef, k) candidates: the int8 graph's order is approximate, the rerank exact.
        wanted = min(RERANK_FACTOR * max(ef, k), self.n_chunks)
        candidates = self._hnsw.candidates(q, wanted, wanted)
        if len(np.unique(candidates)) < min(k, self.n_chunks):
            # A sound graph always offers k candidates; one that cannot (a forged or cut
            # graph) is not trusted with this query: the exact answer instead.
            return self.search(query, k)
        # Full precision when the file keeps a copy (0x09), else stored precision.
        idx, scores = rerank_top(self._rerank, candidates, q, k)
        hits = self._hits(
            idx, scores, index_type="hnsw", reranked=True, precision=self._rerank.dtype
        )
        elapsed = (time.perf_counter() - t0) * 1000
        return SearchResult("hnsw", None, k, self.n_chunks, elapsed, hits, recall_note=RERANK_NOTE)

    def search_graph(
        self,
        query: Vector,
        k: int = 10,
        *,
        hops: int = 1,
        ef: int = 100,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult:
        """Seeds from exact, expanded over the chunk graph, reranked: the same hits as search
        (exact without a graph, or with a filter)."""
        ef = check_positive(ef, "ef")
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
            raise QueryError(f"invalid hops: {hops}")
        if self._graph is None or make_filter(source, section) is not None:
            return self.search(query, k, source=source, section=section)
        t0 = time.perf_counter()
        k = check_k(k)
        q = prepare(query, self.dim)
        n_seeds = min(max(ef, k), self.n_chunks)
        seeds, _ = exact_top_k(self._c.matrix, q, n_seeds)
        union = self._graph.expand(seeds, hops, max(8 * n_seeds, n_seeds))
        # Stored precision, as the exact path scores: so the hits equal search's.
        idx, scores = rerank_top(self._c.matrix, union, q, k)
        hits = self._hits(idx, scores, index_type="graph", reranked=True)
        elapsed = (time.perf_counter() - t0) * 1000
        return SearchResult("graph", None, k, self.n_chunks, elapsed, hits, recall_note=RERANK_NOTE)

    def search_space(
        self,
        query: Vector,
        space: str,
        k: int = 10,
        *,
        expect_model_hash: str | None = None,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult:
        """Exact search over one named embedding space; never falls back to another."""
        t0 = time.perf_counter()
        k = check_k(k)
        found = next((s for s in self._c.spaces if s.name == space), None)
        if found is None:
            raise QueryError(f"embedding space not found: {space}")
        if expect_model_hash is not None and expect_model_hash != found.model_hash:
            raise QueryError(
                f"model_hash mismatch: space {space} was built with {found.model_hash}, "
                f"expected {expect_model_hash}"
            )
        q = prepare(query, found.dim)
        allowed = self._allowed(source, section)
        idx, scores = exact_top_k(self._c.space_matrix(found), q, k, allowed)
        hits = self._hits(idx, scores, index_type="space", reranked=False, model=found.model)
        elapsed = (time.perf_counter() - t0) * 1000
        searched = self._searched(allowed)
        return SearchResult("space", 1.0, k, searched, elapsed, hits, space=space)

    # --- text ----------------------------------------------------------------

    def embedder(self, *, model_path: str | os.PathLike[str] | None = None) -> Embedder:
        """This file's own model (loaded once per process), after the model gate."""
        found = resolve_query(self.model, model_path=model_path, download=False)
        check_gate(found, self.manifest)
        return found

    def candidates(self, source: str | None, section: str | None) -> Candidates:
        """Each method's best candidates among the chunks the filters keep."""
        allowed = self._allowed(source, section)
        bm25 = self._bm25
        return Candidates(
            vector_top=lambda q, depth: self.candidates_vector(q, depth, allowed),
            text_top=(lambda t, depth: bm25.search(t, depth, allowed)) if bm25 else None,
            n_searched=self._searched(allowed),
        )

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
    ) -> list[Hit]:
        """Hits for ranked ordinals of this file (with their citations and snippets)."""
        return self._hits(
            idx,
            scores,
            index_type=index_type,
            reranked=reranked,
            score_type=score_type,
            ranks=ranks,
            terms=terms,
            precision=precision,
        )

    def candidates_vector(
        self, q: np.ndarray, depth: int, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The exact top ``depth`` for a prepared query, among ``allowed``."""
        matrix = self._c.matrix
        return exact_top_k(matrix, q, min(depth, matrix.n), allowed)

    def filtered(self, source: str | None, section: str | None) -> np.ndarray | None:
        """Sorted ordinals the filters keep (None: no filter, every chunk)."""
        return self._allowed(source, section)

    # --- citations -----------------------------------------------------------

    def cite(self, citation: str | Citation) -> Chunk:
        """Resolve a citation in this file; its content_hash must be this file's."""
        cit = parse_citation(citation) if isinstance(citation, str) else citation
        if cit.content_hash != self.content_hash:
            raise CitationError(
                f"content_hash mismatch: the citation names {cit.content_hash}, "
                f"this file has {self.content_hash}"
            )
        i = self.find(cit.chunk_id)
        if i is None:
            raise CitationError(f"chunk not found: {cit.chunk_id}")
        return self.chunk(i)

    def source_root(self) -> Path:
        """Where relative source_uris live: the build's ``source_root`` next to this file."""
        here = self.path.resolve().parent
        root = self._c.provenance.get("source_root")
        return (here / root).resolve() if isinstance(root, str) else here

    def verify_source(self, chunk: Chunk, root: str | os.PathLike[str] | None = None) -> Path:
        """Check that the source's bytes in the chunk's span equal its stored text.

        Relative source_uris are resolved against ``root``, by default the build's source
        root (recorded in provenance) or the folder holding this .urna file. For derived
        formats (HTML, PDF, DOCX, JSONL and CSV records) the span indexes the extracted
        text: the source is read and extracted again. Returns the path read.
        """
        base = Path(root) if root is not None else self.source_root()
        expected = self.text_bytes(chunk.ordinal)
        return check_source(chunk.source_uri, chunk.byte_start, chunk.byte_end, expected, base)

    # --- the whole picture -----------------------------------------------------

    def validate(self) -> AuditReport:
        """Recompute every chunk id, check they are unique, walk every vector for NaN/Inf and
        norm, and check each derived section against what it derives from
        (``search/derived.py``)."""
        report = audit(self._c)
        audit_derived(self._c, self._store, self._bm25, self._hnsw, self._graph)
        return report

    def close(self) -> None:
        self._c.close()

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
