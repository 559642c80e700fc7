"""HNSW (section 0x07): a usearch index stored in the file and viewed from the memory map.

Payload (version 1): the 12-byte prefix (u32 version, u64 count = n_chunks),
u32 dim, u32 connectivity, u32 expansion_add, u32 expansion_search (the
default ef), then usearch's own serialized index (metric cos, int8 scalars,
key i = chunk ordinal i). The index only proposes candidates: every printed
score is the exact cosine recomputed from the stored vectors.
"""

from __future__ import annotations

import struct
import threading
from typing import Any

import numpy as np

from urna.errors import FormatError, missing_extra
from urna.format.layout import SectionId, section_label
from urna.format.reader import Container
from urna.index.hnsw_check import check_graph
from urna.native import share_cxx_runtime

VERSION = 1
CONNECTIVITY = 32
EXPANSION_ADD = 128
EXPANSION_SEARCH = 100
# The expansion a chunk's graph neighbours are found at: usearch's default, which every
# file's chunk graph was built with (a viewed index starts at it), and which validation
# recomputes them at, whatever queries asked before.
NEIGHBOURS_EXPANSION = 64
_HEAD = struct.Struct("<IQIIII")
WHERE = f"section {section_label(SectionId.HNSW_INDEX)}"
_KINDS = {
    "kind_metric": "Cos",
    "kind_scalar": "I8",
    "kind_key": "U64",
    "kind_compressed_slot": "U32",
}


def _bad(message: str) -> FormatError:
    return FormatError(f"hnsw index: {message}", check=18, section=WHERE)


def _usearch() -> Any:
    share_cxx_runtime()
    try:
        from usearch.index import Index
    except ImportError:
        raise missing_extra("usearch", "") from None
    return Index


def build_payload(matrix: np.ndarray, *, connectivity: int = CONNECTIVITY) -> bytes:
    """The 0x07 payload for unit rows (float32): built on every core, deterministic keys."""
    index_cls = _usearch()
    n, dim = matrix.shape
    index = index_cls(
        ndim=dim,
        metric="cos",
        dtype="i8",
        connectivity=connectivity,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )
    # One thread: a multi-threaded build links the graph in a different order each run,
    # and a build must give the same bytes every time.
    index.add(
        np.arange(n, dtype=np.uint64), np.ascontiguousarray(matrix, dtype=np.float32), threads=1
    )
    blob = bytes(index.save())
    return _HEAD.pack(VERSION, n, dim, connectivity, EXPANSION_ADD, EXPANSION_SEARCH) + blob


class HNSWIndex:
    """The stored HNSW, viewed in place (no copy, no temporary file)."""

    def __init__(self, payload: memoryview, n_chunks: int, dim: int) -> None:
        if len(payload) < _HEAD.size + 64:
            raise _bad(f"payload of {len(payload)} bytes is too short")
        version, count, d, connectivity, _, ef = _HEAD.unpack_from(payload, 0)
        if version != VERSION:
            raise _bad(f"unsupported version {version}, expected {VERSION}")
        if count != n_chunks or d != dim:
            raise _bad(f"indexes {count} vectors of dim {d}, the file has {n_chunks} of {dim}")
        blob = payload[_HEAD.size :]
        index_cls = _usearch()
        try:
            meta = index_cls.metadata(blob)
        except Exception as exc:  # usearch refuses a damaged header with its own error
            raise _bad(f"unreadable usearch header ({exc})") from None
        if not meta or meta.get("dimensions") != dim or meta.get("count_present") != count:
            raise _bad(f"usearch header disagrees: {meta}")
        kinds = {k: str(meta.get(k, "")).rsplit(".", 1)[-1].split(":")[0] for k in _KINDS}
        if kinds != _KINDS or meta.get("count_deleted") != 0:
            raise _bad(f"usearch index is not a cos/i8 index keyed by u64 with u32 slots: {meta}")
        self.layout = check_graph(blob, int(count), int(dim), int(connectivity), _bad)
        try:
            index = index_cls(ndim=dim, metric="cos", dtype="i8", connectivity=connectivity)
            index.view(blob)
        except Exception as exc:
            raise _bad(f"cannot view the usearch index ({exc})") from None
        if len(index) != count:
            raise _bad(f"usearch index holds {len(index)} vectors, expected {count}")
        self._index = index
        # A walk's expansion is a setting of the graph: set and walked under this lock, so a
        # thread never walks at another's (usearch walks one graph one query at a time
        # anyway; different graphs still walk in parallel).
        self._walking = threading.Lock()
        self._blob = blob
        self.default_ef = int(ef)
        self.connectivity = int(connectivity)

    def candidates(self, query: np.ndarray, count: int, ef: int | None = None) -> np.ndarray:
        """Ordinals of up to ``count`` approximate nearest chunks (the int8 graph proposes,
        the caller reranks by exact cosine)."""
        return self.nearest(query, count, ef)[0]

    def nearest(
        self, query: np.ndarray, count: int, ef: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``candidates`` with the graph's own distances (nearest first)."""
        # One walk in the calling thread: usearch's default (threads=0) hands even one query
        # to its pool, 15-55 µs a walk (a 6,250-chunk graph at expansion 100: 129 against
        # 148-190 µs), and a collection already walks its shards in its own threads.
        with self._walking:
            self._index.expansion_search = max(ef or self.default_ef, count)
            found = self._index.search(np.asarray(query, dtype=np.float32), count, threads=1)
        keys = np.asarray(found.keys, dtype=np.int64)
        distances = np.asarray(found.distances, dtype=np.float32).reshape(-1)[: len(keys)]
        ok = (keys >= 0) & (keys < len(self._index))
        return keys[ok], distances[ok]

    def neighbours(
        self, matrix: np.ndarray, top_m: int, ordinals: np.ndarray | None = None
    ) -> list[np.ndarray]:
        """Up to ``top_m`` nearest other chunks of each row's chunk (for the chunk graph):
        row r is chunk ``ordinals[r]`` (by default chunk r)."""
        with self._walking:
            self._index.expansion_search = NEIGHBOURS_EXPANSION
            found = self._index.search(np.ascontiguousarray(matrix, dtype=np.float32), top_m + 1)
        keys = np.asarray(found.keys, dtype=np.int64).reshape(len(matrix), -1)
        own = np.arange(len(matrix)) if ordinals is None else np.asarray(ordinals)
        out = []
        for i, row in zip(own.tolist(), keys, strict=True):
            row = row[(row >= 0) & (row != i)]
            out.append(row[:top_m])
        return out


def load_hnsw(container: Container) -> HNSWIndex | None:
    """The HNSW index when the manifest declares it; refused at open when malformed."""
    caps = container.manifest["capabilities"]
    present = container.has(SectionId.HNSW_INDEX)
    if caps.get("supports_ann") and not present:
        raise FormatError(
            "manifest declares supports_ann but the file has no hnsw_index section",
            check=18,
            section=WHERE,
        )
    if not (caps.get("supports_ann") and present):
        return None
    m = container.manifest
    return HNSWIndex(container.payload(SectionId.HNSW_INDEX), m["n_chunks"], m["embedding_dim"])
