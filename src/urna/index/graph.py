"""The chunk graph (section 0x0C): next-chunk edges both ways within a source, plus up to
``graph_top_m`` semantic edges per chunk taken from the HNSW neighbours.

Payload (version 1): the 12-byte prefix (u32 version, u64 count = n_chunks),
u32 top_m, u32 0, u64 indptr[count + 1], u32 targets[nnz], u8 kinds[nnz]
(0 = next chunk, 1 = previous chunk, 2 = semantic).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from urna.errors import FormatError
from urna.format.layout import SectionId, section_label
from urna.format.reader import Container

VERSION = 1
TOP_M = 8
NEXT, PREVIOUS, SEMANTIC = 0, 1, 2
_HEAD = struct.Struct("<IQII")
WHERE = f"section {section_label(SectionId.GRAPH_ADJACENCY)}"


def _bad(message: str) -> FormatError:
    return FormatError(f"graph: {message}", check=18, section=WHERE)


def build_payload(
    sources: Sequence[str], semantic: Sequence[np.ndarray], *, top_m: int = TOP_M
) -> bytes:
    """Edges for chunks in file order: ``sources[i]`` names chunk i's source."""
    n = len(sources)
    rows: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    last: dict[str, int] = {}
    for i, source in enumerate(sources):
        j = last.get(source)
        if j is not None:
            rows[j].append((i, NEXT))
            rows[i].append((j, PREVIOUS))
        last[source] = i
    for i, neighbours in enumerate(semantic):
        have = {t for t, _ in rows[i]}
        for t in neighbours.tolist()[:top_m]:
            if t != i and t not in have:
                rows[i].append((int(t), SEMANTIC))
                have.add(int(t))
    indptr = np.zeros(n + 1, dtype=np.uint64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    targets = np.array([t for r in rows for t, _ in r], dtype=np.uint32)
    kinds = np.array([k for r in rows for _, k in r], dtype=np.uint8)
    return b"".join(
        [
            _HEAD.pack(VERSION, n, top_m, 0),
            indptr.astype("<u8").tobytes(),
            targets.astype("<u4").tobytes(),
            kinds.tobytes(),
        ]
    )


class ChunkGraph:
    def __init__(self, payload: memoryview, n_chunks: int) -> None:
        size = len(payload)
        if size < _HEAD.size + 8 * (n_chunks + 1):
            raise _bad(f"payload of {size} bytes is too short for {n_chunks} chunks")
        version, count, top_m, _ = _HEAD.unpack_from(payload, 0)
        if version != VERSION:
            raise _bad(f"unsupported version {version}, expected {VERSION}")
        if count != n_chunks:
            raise _bad(f"has {count} nodes but the file has {n_chunks} chunks")
        indptr = np.frombuffer(payload, dtype="<u8", count=n_chunks + 1, offset=_HEAD.size)
        nnz = int(indptr[-1])
        expected = _HEAD.size + 8 * (n_chunks + 1) + 5 * nnz
        if size != expected:
            raise _bad(f"payload is {size} bytes, its tables need {expected}")
        if indptr[0] != 0 or np.any(np.diff(indptr.astype(np.int64)) < 0):
            raise _bad("indptr must start at 0 and never decrease")
        offset = _HEAD.size + 8 * (n_chunks + 1)
        self.targets = np.frombuffer(payload, dtype="<u4", count=nnz, offset=offset)
        self.kinds = np.frombuffer(payload, dtype=np.uint8, count=nnz, offset=offset + 4 * nnz)
        if nnz and int(self.targets.max()) >= n_chunks:
            raise _bad(f"an edge points at node {int(self.targets.max())} of {n_chunks}")
        if nnz and int(self.kinds.max()) > SEMANTIC:
            raise _bad(f"unknown edge kind {int(self.kinds.max())}")
        self.indptr = indptr
        self.top_m = int(top_m)

    def expand(self, seeds: np.ndarray, hops: int, limit: int) -> np.ndarray:
        """Seeds plus the nodes reached breadth-first over every edge type, at most ``limit``."""
        seen = dict.fromkeys(seeds.tolist())
        frontier = list(seen)
        for _ in range(hops):
            nxt = []
            for node in frontier:
                start, end = int(self.indptr[node]), int(self.indptr[node + 1])
                for t in self.targets[start:end].tolist():
                    if t not in seen:
                        if len(seen) >= limit:
                            return np.fromiter(seen, dtype=np.int64)
                        seen[t] = None
                        nxt.append(t)
            frontier = nxt
            if not frontier:
                break
        return np.fromiter(seen, dtype=np.int64)


def load_graph(container: Container) -> ChunkGraph | None:
    """The chunk graph only when section 0x0C exists and capabilities_ext.graph_present says so."""
    ext = container.manifest.get("capabilities_ext") or {}
    if not (ext.get("graph_present") and container.has(SectionId.GRAPH_ADJACENCY)):
        return None
    return ChunkGraph(container.payload(SectionId.GRAPH_ADJACENCY), container.header.n_chunks)
