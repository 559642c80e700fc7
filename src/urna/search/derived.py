"""What ``urna validate`` proves of the sections derived from others, beyond what an open
checks. An open proves each section's bytes are the bytes written and that a search cannot
read past them; it does not prove that an index still says what the data it was built
from says. Here:

- **BM25 (0x08)**: rebuilt from the stored texts (as the build indexed them: each chunk in
  its context, ``ingest.context.bm25_texts``) with the parameters and tokenizer it records;
  every weight, posting, term and length must be the rebuilt one (all chunks, no sample).
- **HNSW (0x07)**: every node must be reachable from the entry point over the graph's edges
  (all nodes), and a search for each of ``SELF_SAMPLE`` stored vectors spread over the file
  must find it among its ``SELF_K`` best (or, looking ten times deeper, it or a chunk
  scoring within ``NEAR`` of its own: near-duplicates share int8 codes).
- **Chunk graph (0x0C)**: every next/previous edge recomputed from the sources' order (all
  chunks); the semantic edges of ``SELF_SAMPLE`` chunks recomputed from the HNSW, as the
  build takes them.
- **Named spaces (0x20 + i)**: every row finite and of unit norm, as the main embeddings.

What this cannot prove (``docs/format.md``): a band negated or rotated is a valid band, an
HNSW graph that finds every sampled vector may still miss others, and a file whose texts
and indexes were forged together is self-consistent.
"""

from __future__ import annotations

import numpy as np

from urna.errors import FormatError
from urna.format.chunks import ChunkStore
from urna.format.layout import Encoding, SectionId, section_label
from urna.format.reader import Container
from urna.index.bm25 import BM25Index
from urna.index.bm25_check import check_rebuilt
from urna.index.graph import NEXT, PREVIOUS, SEMANTIC, ChunkGraph
from urna.index.graph import WHERE as GRAPH_WHERE
from urna.index.hnsw import WHERE as HNSW_WHERE
from urna.index.hnsw import HNSWIndex
from urna.index.mixed import FIELD
from urna.index.rowscore import row_scores
from urna.ingest.context import bm25_texts

SELF_SAMPLE = 512
SELF_K = 10
SELF_EF = 200
NEAR = 2e-3  # two vectors whose cosine is this close may share every int8 code


def audit_derived(
    container: Container,
    store: ChunkStore,
    bm25: BM25Index | None,
    hnsw: HNSWIndex | None,
    graph: ChunkGraph | None,
) -> None:
    """Refuse (FormatError, check 18) the first derived section that disagrees."""
    for space in container.spaces:
        band = container.space_matrix(space)
        where = f"section {section_label(space.section)} (space {space.name})"
        row = band.first_non_finite()
        if row is not None:
            message = f"NaN or Inf in space {space.name} (row {row})"
            raise FormatError(message, check=18, section=where)
        off = band.first_not_unit()
        if off is not None:
            raise FormatError(
                f"space {space.name} row {off[0]} has L2 norm {off[1]:.6g}; rows must be "
                "L2-normalized",
                check=18,
                section=where,
            )
    if bm25 is not None:
        chunks = [store.chunk(i) for i in range(store.n)]
        recipe = container.manifest.get("embed_context")
        texts = bm25_texts(chunks, recipe)
        fields = container.chunk_fields
        languages = (
            [fields.records[int(r)].get(FIELD) for r in fields.of_chunk.tolist()]
            if fields is not None
            else [None] * store.n
        )
        payload = container.payload(SectionId.BM25_INDEX)
        check_rebuilt(payload, texts, store.source_uris, languages)
    if hnsw is not None:  # before the graph, which takes its semantic edges from it
        check_hnsw(container, hnsw)
    if graph is not None:
        check_graph(container, store, graph)


def _bad_hnsw(message: str) -> FormatError:
    return FormatError(f"hnsw index: {message}", check=18, section=HNSW_WHERE)


def sample(n: int, size: int = SELF_SAMPLE) -> np.ndarray:
    """Up to ``size`` ordinals spread evenly over [0, n), first and last included."""
    if not n:
        return np.empty(0, dtype=np.int64)
    return np.unique(np.linspace(0, n - 1, num=min(n, size)).astype(np.int64))


def check_hnsw(container: Container, hnsw: HNSWIndex) -> None:
    lost = hnsw.layout.first_unreachable()
    if lost is not None:
        raise _bad_hnsw(f"node {lost} cannot be reached from the entry point")
    matrix = container.matrix
    n = container.header.n_chunks
    for i in sample(n).tolist():
        q = matrix.rows(slice(i, i + 1))[0]
        if i in hnsw.candidates(q, min(SELF_K, n), ef=SELF_EF).tolist():
            continue
        # Many chunks may share one int8 code (near-duplicates): look deeper, and accept a
        # chunk whose exact score is the chunk's own within what int8 codes can tell apart.
        found = hnsw.candidates(q, min(10 * SELF_K, n), ef=2 * SELF_EF)
        if i in found.tolist():
            continue
        own = row_scores(matrix, np.array([i]), q)[0]
        if not len(found) or row_scores(matrix, found, q).max() < own - NEAR:
            raise _bad_hnsw(f"a search for chunk {i}'s own vector does not find it")


def check_graph(container: Container, store: ChunkStore, graph: ChunkGraph) -> None:
    def bad(message: str) -> FormatError:
        return FormatError(f"graph: {message}", check=18, section=GRAPH_WHERE)

    uris = store.source_uris
    last: dict[str, int] = {}
    expected_next = np.full(store.n, -1, dtype=np.int64)
    for i, uri in enumerate(uris):
        j = last.get(uri)
        if j is not None:
            expected_next[j] = i
        last[uri] = i
    expected_previous = np.full(store.n, -1, dtype=np.int64)
    has_next = expected_next >= 0
    expected_previous[expected_next[has_next]] = np.flatnonzero(has_next)
    edges = _edges(graph)
    for kind, expected in ((NEXT, expected_next), (PREVIOUS, expected_previous)):
        node, target = edges[kind]
        stored = np.full(store.n, -1, dtype=np.int64)
        if len(np.unique(node)) != len(node):
            raise bad(f"a chunk has two {'next' if kind == NEXT else 'previous'} edges")
        stored[node] = target
        wrong = np.flatnonzero(stored != expected)
        if len(wrong):
            name = "next" if kind == NEXT else "previous"
            raise bad(f"chunk {int(wrong[0])}'s {name} edge disagrees with its source's order")
    matrix = container.matrix
    if not container.has(SectionId.HNSW_INDEX) or matrix.encoding != Encoding.RAW:
        return  # the build took semantic edges from float32 rows this file no longer holds
    # A fresh view, as the build searched it (a search leaves its expansion setting behind).
    hnsw = HNSWIndex(container.payload(SectionId.HNSW_INDEX), store.n, matrix.dim)
    node, target = edges[SEMANTIC]
    picks = sample(store.n)
    recomputed = hnsw.neighbours(matrix.rows(picks), graph.top_m, picks)
    for i, found in zip(picks.tolist(), recomputed, strict=True):
        structural = {int(expected_next[i]), int(expected_previous[i])}
        want = list(dict.fromkeys(t for t in found.tolist() if t not in structural))
        if target[node == i].tolist() != want:
            raise bad(f"chunk {i}'s semantic edges are not its HNSW neighbours")


def _edges(graph: ChunkGraph) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """(source node, target) arrays of each edge kind."""
    indptr: np.ndarray = np.asarray(graph.indptr, dtype=np.int64)
    counts = indptr[1:] - indptr[:-1]
    nodes = np.repeat(np.arange(len(counts)), counts)
    targets = graph.targets.astype(np.int64)
    return {
        k: (nodes[graph.kinds == k], targets[graph.kinds == k]) for k in (NEXT, PREVIOUS, SEMANTIC)
    }
