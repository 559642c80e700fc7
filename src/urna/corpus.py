"""``urna.open``: a verified .urna file you can search, cite and inspect."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from urna.cite import (
    Citation,
    derived_kind,
    parse_citation,
    resolve_source,
    verify_derived,
    verify_source,
)
from urna.embed.base import Embedder
from urna.embed.gate import check_gate
from urna.embed.registry import resolve
from urna.errors import CitationError, FormatError, QueryError
from urna.format.audit import AuditReport, audit
from urna.format.embeddings import Matrix
from urna.format.embeddings import view as view_matrix
from urna.format.identity import citation_id
from urna.format.layout import REQUIRED_SECTIONS, Encoding, SectionId, section_label
from urna.format.manifest import PLACEHOLDER_MODEL_HASH
from urna.format.reader import Container, Verify
from urna.format.spaces import Space
from urna.index.bm25 import BM25Index
from urna.index.graph import ChunkGraph
from urna.index.hnsw import HNSWIndex
from urna.search.exact import exact_top_k
from urna.search.hybrid import embed_problem, resolve_mode
from urna.search.hybrid import rank as rank_text
from urna.search.query import check_k, check_positive, prepare
from urna.search.result import RECALL_EXACT, RECALL_RERANKED, Hit, SearchResult
from urna.search.snippet import snippet
from urna.search.topk import top_k


@dataclass(frozen=True)
class Chunk:
    """A stored chunk: its place in the file, its identity, its text and its source span."""

    ordinal: int
    chunk_id: str
    text: str
    source_uri: str
    byte_start: int
    byte_end: int
    citation_id: str
    section_path: str = ""
    page: int = 0
    source_ordinal: int = 0  # 1-based position within its source, 0 if the file does not say


@dataclass(frozen=True)
class Section:
    """One entry of the section table."""

    id: int
    name: str
    encoding: str
    offset: int
    size: int
    checksum: str


RERANK_FACTOR = 2  # HNSW candidates reranked per query: this times max(ef, k) (measured)


class Corpus:
    """A .urna file opened for reading. Create it with :func:`urna.open`."""

    def __init__(self, container: Container) -> None:
        self._c = container
        self.manifest: dict[str, Any] = dict(container.manifest)
        self._embedders: dict[str | None, Embedder] = {}
        self._bm25 = load_bm25(container)
        self._hnsw = load_hnsw(container)
        self._graph = load_graph(container)
        self._rerank = load_rerank_matrix(container)

    # --- what the file is ----------------------------------------------------

    @property
    def path(self) -> Path:
        return self._c.path

    @property
    def n_chunks(self) -> int:
        return int(self.manifest["n_chunks"])

    @property
    def dim(self) -> int:
        return int(self.manifest["embedding_dim"])

    @property
    def model(self) -> str:
        return str(self.manifest["embedding_model"])

    @property
    def model_hash(self) -> str:
        return str(self.manifest["model_hash"])

    @property
    def has_placeholder_model_hash(self) -> bool:
        return self.model_hash == PLACEHOLDER_MODEL_HASH

    @property
    def dtype(self) -> str:
        return str(self.manifest["dtype"])

    @property
    def index_type(self) -> str:
        return str(self.manifest["index_type"])

    @property
    def size(self) -> int:
        return self._c.size

    @property
    def file_hash(self) -> str:
        return self._c.file_hash

    @property
    def content_hash(self) -> str:
        return self._c.content_hash

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self._c.provenance)

    @property
    def search_contract(self) -> dict[str, Any]:
        return dict(self._c.search_contract)

    @property
    def verified(self) -> Verify:
        return self._c.verify

    def sections(self) -> list[Section]:
        return [
            Section(
                id=e.section_id,
                name=e.name,
                encoding=e.encoding.label,
                offset=e.offset,
                size=e.size,
                checksum=e.checksum.hex(),
            )
            for e in sorted(self._c.entries.values(), key=lambda e: e.section_id)
        ]

    # --- chunks --------------------------------------------------------------

    def chunk_id(self, i: int) -> str:
        return self._c.chunk_id_rows[i].tobytes().decode("ascii")

    def chunk(self, i: int) -> Chunk:
        if not 0 <= i < self.n_chunks:
            raise IndexError(f"chunk ordinal {i} out of range [0, {self.n_chunks})")
        c = self._c
        cid = c.chunk_id_rows[i].tobytes().decode("ascii")
        spans = c.spans
        meta = c.chunk_meta
        extra: dict[str, Any] = (
            {
                "section_path": meta.section_paths[i],
                "page": int(meta.pages[i]),
                "source_ordinal": int(meta.ordinals[i]),
            }
            if meta is not None
            else {}
        )
        return Chunk(
            ordinal=i,
            chunk_id=cid,
            text=self._c.texts[i],
            source_uri=spans.uris[i],
            byte_start=int(spans.byte_start[i]),
            byte_end=int(spans.byte_end[i]),
            citation_id=citation_id(self.content_hash, cid),
            **extra,
        )

    def text_bytes(self, i: int) -> bytes:
        return self._c.texts.raw(i)

    def embedding(self, i: int) -> np.ndarray:
        """Row i as stored, dequantized to float32."""
        return self._c.matrix.rows(slice(i, i + 1))[0]

    def find(self, chunk_id: str) -> int | None:
        """The ordinal of a chunk id, or None."""
        target = np.frombuffer(chunk_id.encode("ascii", "replace"), dtype=np.uint8)
        rows = self._c.chunk_id_rows
        if len(target) != rows.shape[1]:
            return None
        # First a cheap filter on 8 bytes of the hex digest, then an exact compare.
        probe = np.flatnonzero(np.all(rows[:, 7:15] == target[7:15], axis=1))
        for i in probe:
            if np.array_equal(rows[i], target):
                return int(i)
        return None

    # --- search and cite -----------------------------------------------------

    def search(self, query: Sequence[float] | np.ndarray, k: int = 10) -> SearchResult:
        """Exact cosine search: every chunk scored, the top ``k`` returned, ties in file order."""
        t0 = time.perf_counter()
        k = check_k(k)
        q = prepare(query, self.dim)
        idx, scores = exact_top_k(self._c.matrix, q, k)
        hits = self._hits(idx, scores, index_type="exact", reranked=False)
        elapsed = (time.perf_counter() - t0) * 1000
        return SearchResult("exact", RECALL_EXACT, k, self.n_chunks, elapsed, hits)

    @property
    def hnsw(self) -> HNSWIndex | None:
        return self._hnsw

    @property
    def graph(self) -> ChunkGraph | None:
        return self._graph

    def _rerank_top(
        self, candidates: np.ndarray, q: np.ndarray, k: int, matrix: Matrix
    ) -> tuple[np.ndarray, ...]:
        """The k best of distinct candidates by exact cosine over ``matrix``, ties in file order."""
        order = np.sort(candidates)
        scores = matrix.rows(order) @ q
        best = top_k(scores, k)
        return order[best], scores[best]

    def search_ann(
        self, query: Sequence[float] | np.ndarray, k: int = 10, *, ef: int = 100
    ) -> SearchResult:
        """HNSW candidates (at least max(ef, k)) reranked by exact cosine; exact without HNSW."""
        if self._hnsw is None:
            return self.search(query, k)
        t0 = time.perf_counter()
        k = check_k(k)
        ef = check_positive(ef, "ef")
        q = prepare(query, self.dim)
        # Twice max(ef, k) candidates: the int8 graph's order is approximate, the rerank exact.
        wanted = min(RERANK_FACTOR * max(ef, k), self.n_chunks)
        candidates = self._hnsw.candidates(q, wanted, wanted)
        # Full precision when the file keeps a copy (0x09), else stored precision.
        idx, scores = self._rerank_top(candidates, q, k, self._rerank)
        hits = self._hits(
            idx, scores, index_type="hnsw", reranked=True, precision=self._rerank.dtype
        )
        elapsed = (time.perf_counter() - t0) * 1000
        return SearchResult("hnsw", RECALL_RERANKED, k, self.n_chunks, elapsed, hits)

    def spaces(self) -> list[Space]:
        return list(self._c.spaces)

    def search_space(
        self,
        query: Sequence[float] | np.ndarray,
        space: str,
        k: int = 10,
        *,
        expect_model_hash: str | None = None,
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
        idx, scores = exact_top_k(self._c.space_matrix(found), q, k)
        hits = self._hits(idx, scores, index_type="space", reranked=False, model=found.model)
        elapsed = (time.perf_counter() - t0) * 1000
        return SearchResult("space", RECALL_EXACT, k, self.n_chunks, elapsed, hits, space=space)

    def search_graph(
        self, query: Sequence[float] | np.ndarray, k: int = 10, *, hops: int = 1, ef: int = 100
    ) -> SearchResult:
        """Seeds from exact, expanded over the chunk graph, reranked: the same hits as search."""
        if self._graph is None:
            return self.search(query, k)
        t0 = time.perf_counter()
        k = check_k(k)
        ef = check_positive(ef, "ef")
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
            raise QueryError(f"invalid hops: {hops}")
        q = prepare(query, self.dim)
        n_seeds = min(max(ef, k), self.n_chunks)
        seeds, _ = exact_top_k(self._c.matrix, q, n_seeds)
        union = self._graph.expand(seeds, hops, max(8 * n_seeds, n_seeds))
        # Stored precision, as the exact path scores: so the hits equal search's.
        idx, scores = self._rerank_top(union, q, k, self._c.matrix)
        hits = self._hits(idx, scores, index_type="graph", reranked=True)
        elapsed = (time.perf_counter() - t0) * 1000
        return SearchResult("graph", RECALL_RERANKED, k, self.n_chunks, elapsed, hits)

    def embedder(self, *, model_path: str | os.PathLike[str] | None = None) -> Embedder:
        """This file's own model, loaded once, after the model gate (name, dim, model_hash)."""
        key = str(model_path) if model_path is not None else None
        cached = self._embedders.get(key)
        if cached is None:
            cached = resolve(self.model, model_path=model_path)
            check_gate(cached, self.manifest)
            self._embedders[key] = cached
        return cached

    @property
    def bm25(self) -> BM25Index | None:
        return self._bm25

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
    ) -> SearchResult:
        """Search by text: BM25, the file's own model (through the gate), or both fused.

        ``mode``: ``text`` (BM25 only, no model), ``vector``, ``hybrid``, or ``auto``
        (hybrid when the file has BM25 and its model can embed the query).
        """
        k = check_k(k)
        if not isinstance(text, str) or not text.strip():
            raise QueryError("empty query")
        recorded = self.manifest.get("fusion")
        if fusion is None:
            fusion = recorded.get("default", "calibrated") if isinstance(recorded, dict) else None
            fusion = fusion if fusion in ("calibrated", "rrf") else "calibrated"

        def get_embedder() -> Embedder:
            nonlocal embedder
            if embedder is None:
                embedder = self.embedder(model_path=model_path)
            else:
                check_gate(embedder, self.manifest)
            return embedder

        def must_embed() -> Exception | None:
            get_embedder()  # an explicit model must pass the gate: its error is the answer
            return None

        # auto leaves the vectors out when the file's own model cannot embed the query; with
        # an embedder or model folder given explicitly, a gate failure is an error instead.
        explicit = embedder is not None or model_path is not None
        probe = must_embed if explicit else embed_problem(get_embedder)
        chosen, note = resolve_mode(mode, has_bm25=self._bm25 is not None, embed_ok=probe)
        if chosen in ("vector", "hybrid"):
            get_embedder().load()  # query_time covers embedding the query, not loading the model
        t0 = time.perf_counter()
        ranked = rank_text(
            text,
            k,
            mode=chosen,
            matrix=self._c.matrix,
            bm25=self._bm25,
            embed=lambda t: get_embedder().embed([t])[0],
            fusion=fusion,
            candidates=candidates,
        )
        hits = self._hits(
            np.asarray(ranked.ordinals, dtype=np.int64),
            np.asarray(ranked.scores),
            index_type="exact" if chosen == "vector" else chosen,
            reranked=False,
            score_type=ranked.score_type,
            ranks=ranked.ranks,
            terms=ranked.query_tokens or text.split(),
        )
        elapsed = (time.perf_counter() - t0) * 1000
        index_type = "exact" if chosen == "vector" else chosen
        recall = RECALL_EXACT if chosen == "vector" else "(not computed; fused ranking)"
        return SearchResult(
            index_type,
            recall,
            k,
            self.n_chunks,
            elapsed,
            hits,
            mode=chosen,
            candidates=ranked.candidates,
            note=note,
        )

    def _hits(
        self,
        idx: np.ndarray,
        scores: np.ndarray,
        *,
        index_type: str,
        reranked: bool,
        score_type: str = "cosine",
        ranks: list[dict[str, dict[str, float]]] | None = None,
        terms: list[str] | None = None,
        precision: str = "",
        model: str | None = None,
    ) -> list[Hit]:
        content, fh = self.content_hash, self.file_hash
        model = model or self.model
        hits = []
        for rank, (i, score) in enumerate(zip(idx.tolist(), scores.tolist(), strict=True), 1):
            c = self.chunk(i)
            hits.append(
                Hit(
                    rank=rank,
                    ordinal=i,
                    chunk_id=c.chunk_id,
                    score=float(score),
                    score_type=score_type,
                    source_uri=c.source_uri,
                    byte_start=c.byte_start,
                    byte_end=c.byte_end,
                    text=c.text,
                    model=model,
                    index_type=index_type,
                    reranked=reranked,
                    file_hash=fh,
                    content_hash=content,
                    citation_id=c.citation_id,
                    section_path=c.section_path,
                    page=c.page,
                    source_ordinal=c.source_ordinal,
                    ranks=ranks[rank - 1] if ranks is not None else {},
                    snippet=snippet(c.text, terms) if terms is not None else "",
                    precision=precision,
                )
            )
        return hits

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

        Relative source_uris are resolved against ``root``, by default the
        build's source root (recorded in provenance) or the folder holding
        this .urna file. For derived formats (HTML, PDF, DOCX, JSONL and CSV
        records) the span indexes the extracted text: the source is read and
        extracted again, and that text's bytes are compared. Returns the path read.
        """
        base = Path(root) if root is not None else self.source_root()
        uri = chunk.source_uri.partition("#")[0]
        path = resolve_source(uri, base)
        expected = self.text_bytes(chunk.ordinal)
        if not derived_kind(path):
            verify_source(path, chunk.byte_start, chunk.byte_end, expected)
            return path
        verify_derived(path, chunk.source_uri, chunk.byte_start, chunk.byte_end, expected)
        return path

    # --- the whole picture -----------------------------------------------------

    def info(self) -> dict[str, Any]:
        """Everything ``urna stats`` and ``urna inspect --json`` show."""
        return {
            "path": str(self.path),
            "file_size": self.size,
            "file_hash": self.file_hash,
            "content_hash": self.content_hash,
            "verified": self.verified,
            "manifest": self.manifest,
            "provenance": self.provenance,
            "search_contract": self.search_contract,
            "sections": [
                {
                    "id": s.id,
                    "id_hex": f"0x{s.id:02X}",
                    "name": s.name,
                    "encoding": s.encoding,
                    "offset": s.offset,
                    "size": s.size,
                    "checksum": s.checksum,
                    "required": s.id in REQUIRED_SECTIONS,
                }
                for s in self.sections()
            ],
            "spaces": [
                {
                    "name": sp.name,
                    "model": sp.model,
                    "model_hash": sp.model_hash,
                    "dim": sp.dim,
                    "section": f"0x{sp.section:02X}",
                }
                for sp in self._c.spaces
            ],
        }

    def validate(self) -> AuditReport:
        """Recompute every chunk id, check they are unique, and walk every vector for NaN/Inf."""
        return audit(self._c)

    def close(self) -> None:
        self._c.close()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<urna.Corpus {self.path} chunks={self.n_chunks} dim={self.dim} model={self.model}>"


def load_bm25(container: Container) -> BM25Index | None:
    """The BM25 index when the manifest says there is one; refused at open when malformed."""
    present = container.has(SectionId.BM25_INDEX)
    declared = bool(container.manifest["capabilities"].get("supports_bm25"))
    if declared and not present:
        raise FormatError(
            "manifest declares supports_bm25 but the file has no bm25_index section",
            check=18,
            section=f"section {section_label(SectionId.BM25_INDEX)}",
        )
    if not (declared and present):
        return None
    return BM25Index(container.payload(SectionId.BM25_INDEX), container.header.n_chunks)


def load_hnsw(container: Container) -> HNSWIndex | None:
    caps = container.manifest["capabilities"]
    present = container.has(SectionId.HNSW_INDEX)
    if caps.get("supports_ann") and not present:
        raise FormatError(
            "manifest declares supports_ann but the file has no hnsw_index section",
            check=18,
            section=f"section {section_label(SectionId.HNSW_INDEX)}",
        )
    if not (caps.get("supports_ann") and present):
        return None
    m = container.manifest
    return HNSWIndex(container.payload(SectionId.HNSW_INDEX), m["n_chunks"], m["embedding_dim"])


def load_graph(container: Container) -> ChunkGraph | None:
    """The chunk graph only when section 0x0C exists and capabilities_ext.graph_present says so."""
    ext = container.manifest.get("capabilities_ext") or {}
    if not (ext.get("graph_present") and container.has(SectionId.GRAPH_ADJACENCY)):
        return None
    return ChunkGraph(container.payload(SectionId.GRAPH_ADJACENCY), container.header.n_chunks)


def load_rerank_matrix(container: Container) -> Matrix:
    """0x09 (a float32 copy of quantized embeddings) when present, else the stored matrix."""
    if not container.has(SectionId.EMBEDDINGS_FP):
        return container.matrix
    entry = container.entries[SectionId.EMBEDDINGS_FP]
    n, dim = container.header.n_chunks, container.header.embedding_dim
    where = f"section {section_label(SectionId.EMBEDDINGS_FP)}"
    if entry.encoding != Encoding.RAW:
        raise FormatError(
            f"embeddings_fp must be raw float32, got {entry.encoding.label}",
            check=18,
            section=where,
        )
    if entry.size != n * dim * 4:
        raise FormatError(
            f"embedding size mismatch: expected {n * dim * 4}, got {entry.size}",
            check=18,
            section=where,
        )
    matrix = view_matrix(container.payload(SectionId.EMBEDDINGS_FP), Encoding.RAW, n, dim)
    if container.verify == "full" and matrix.first_non_finite() is not None:
        raise FormatError("NaN or Inf detected in embeddings_fp", check=18, section=where)
    return matrix


def open_corpus(path: str | os.PathLike[str], *, verify: Verify = "full") -> Corpus:
    """Open and check a .urna file.

    ``verify="full"`` (default) runs every check of the format, hashes
    included; ``verify="trusted"`` runs the structural checks only, for a
    caller that fully verified this same file before.
    """
    return Corpus(Container(path, verify=verify))
