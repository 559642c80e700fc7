"""Derived sections forged so that every checksum is recomputed (only their meaning gives them
away): ``urna validate`` checks each against what it derives from and exits 1 with one line
naming the section and what disagrees (``search/derived.py``)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import PLACEHOLDER, assert_error, run
from tests.forge import put_together, take_apart
from urna.index.bm25 import BM25Index

N, DIM = 60, 8
BM25, HNSW, GRAPH, BAND = 0x08, 0x07, 0x0C, 0x21
HEAD = 28  # urna's prefix before usearch's blob in 0x07
HASH_B = "sha256:" + "b" * 64
WORDS = ["install", "linux", "citation", "hash", "shard", "fusion", "cosine", "model", "gate"]


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    rng = np.random.default_rng(7)
    path = tmp_path_factory.mktemp("derived") / "rich.urna"
    chunks = [
        {
            "text": " ".join(rng.choice(WORDS, size=6)) + f" {i}",
            "source_uri": f"doc{i % 5}.txt",
            "byte_start": i,
            "byte_end": i + 1,
            "section_path": f"Part {i % 3}",
            "source_ordinal": i // 5 + 1,
        }
        for i in range(N)
    ]
    embeddings = rng.standard_normal((N, DIM))
    band = rng.standard_normal((N, 4))
    urna.build(
        path,
        chunks,
        embeddings=embeddings,
        model="m",
        model_hash=PLACEHOLDER,
        chunker_version="c/1",
        bm25=True,
        hnsw=True,
        graph=True,
        spaces=[{"name": "alt", "model": "m2", "model_hash": HASH_B, "embeddings": band}],
    )
    return path.read_bytes()


def _with(original: bytes, section: int, edit: object) -> bytes:
    parts = take_apart(original)
    enc, payload = parts.sections[section]
    raw = bytearray(payload)
    edit(raw)  # type: ignore[operator]
    parts.sections[section] = (enc, bytes(raw))
    return put_together(parts)


def _validate_fails(tmp_path: Path, data: bytes, fragment: str) -> None:
    path = tmp_path / "forged.urna"
    path.write_bytes(data)
    with urna.open(path) as corpus:  # every open check passes: the checksums are right
        assert corpus.n_chunks == N
    assert_error(run("validate", str(path)), fragment)


def test_the_rich_file_validates(original: bytes, tmp_path: Path) -> None:
    path = tmp_path / "rich.urna"
    path.write_bytes(original)
    assert run("validate", str(path)).exit_code == 0


def _weights(original: bytes, weight: float) -> bytes:
    payload = take_apart(original).sections[BM25][1]
    nnz = BM25Index(memoryview(payload), N).weights.size
    start = len(payload) - 4 * N - 4 * nnz

    def edit(raw: bytearray) -> None:
        raw[start : start + 4 * nnz] = np.full(nnz, weight, dtype="<f4").tobytes()

    return _with(original, BM25, edit)


@pytest.mark.parametrize("weight", [0.0, 1e-45])
def test_bm25_weights_no_text_can_give_are_refused_at_open(
    original: bytes, tmp_path: Path, weight: float
) -> None:
    """No posting weighs less than idf(N, N) / (1 + the longest chunk's norm): zero and
    subnormal weights are refused by every verb, never answered with 0 hits."""
    path = tmp_path / "forged.urna"
    path.write_bytes(_weights(original, weight))
    for args in (("search-text", str(path), "install linux", "--mode", "text"),
                 ("validate", str(path))):  # fmt: skip
        assert_error(run(*args), "bm25 index: a posting weight is outside")


def test_forged_bm25_weights_in_range_fail_validate(original: bytes, tmp_path: Path) -> None:
    _validate_fails(tmp_path, _weights(original, 3.0), "bm25 index: weight")


def test_a_forged_bm25_length_fails_validate(original: bytes, tmp_path: Path) -> None:
    def edit(raw: bytearray) -> None:
        raw[len(raw) - 4 : len(raw)] = (999).to_bytes(4, "little")

    _validate_fails(tmp_path, _with(original, BM25, edit), "length")


def _nodes(payload: bytes) -> tuple[list[int], int]:
    """Byte offsets of every node's level-0 neighbour count, and the level-0 capacity."""
    rows, cols = struct.unpack_from("<II", payload, HEAD)
    graph = HEAD + 8 + rows * cols + 64
    _, conn, conn_base, _, _ = struct.unpack_from("<5Q", payload, graph)
    levels = np.frombuffer(payload, dtype="<i2", count=rows, offset=graph + 40)
    at, out = graph + 40 + 2 * rows, []
    for level in levels.tolist():
        out.append(at + 10)
        at += 10 + 4 + 4 * conn_base + level * (4 + 4 * conn)
    return out, int(conn_base)


@pytest.mark.parametrize("count", [0, 1])
def test_hnsw_neighbour_counts_cut_fail_validate(
    original: bytes, tmp_path: Path, count: int
) -> None:
    counts, _ = _nodes(take_apart(original).sections[HNSW][1])

    def edit(raw: bytearray) -> None:
        for at in counts:
            raw[at : at + 4] = count.to_bytes(4, "little")

    _validate_fails(tmp_path, _with(original, HNSW, edit), "hnsw index")
    with urna.open(tmp_path / "forged.urna") as corpus:  # the query verbs still answer k
        q = corpus.embedding(3)
        assert len(corpus.search_ann(q, k=5).hits) == 5


def test_one_node_cut_off_fails_validate(original: bytes, tmp_path: Path) -> None:
    """Every list that names node 5 loses it: no search can reach it any more."""
    payload = take_apart(original).sections[HNSW][1]
    counts, _ = _nodes(payload)

    def edit(raw: bytearray) -> None:
        for at in counts:
            n = int.from_bytes(raw[at : at + 4], "little")
            ids = [int.from_bytes(raw[at + 4 + 4 * j : at + 8 + 4 * j], "little") for j in range(n)]
            kept = [x for x in ids if x != 5]
            raw[at : at + 4] = len(kept).to_bytes(4, "little")
            for j, x in enumerate(kept):
                raw[at + 4 + 4 * j : at + 8 + 4 * j] = x.to_bytes(4, "little")

    data = _with(original, HNSW, edit)
    parts = take_apart(data)
    rows, cols = struct.unpack_from("<II", parts.sections[HNSW][1], HEAD)
    graph = HEAD + 8 + rows * cols + 64
    entry = struct.unpack_from("<5Q", parts.sections[HNSW][1], graph)[4]
    if entry == 5:
        pytest.skip("node 5 is the entry point of this graph")
    _validate_fails(tmp_path, data, "hnsw index: node 5 cannot be reached")


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("scaled by 1000", lambda band: band * 1000),
        ("zero rows", lambda band: band * 0),
        ("a zero first row", lambda band: np.vstack([band[:1] * 0, band[1:]])),
        ("subnormal rows", lambda band: band * 1e-40),
    ],
)
def test_a_band_off_the_unit_sphere_fails_validate(
    original: bytes, tmp_path: Path, name: str, change: object
) -> None:
    def edit(raw: bytearray) -> None:
        band = np.frombuffer(bytes(raw), dtype="<f4").reshape(N, -1)
        raw[:] = np.asarray(change(band), dtype="<f4").tobytes()  # type: ignore[operator]

    _validate_fails(tmp_path, _with(original, BAND, edit), "space alt row 0 has L2 norm")


def _graph_tables(payload: bytes) -> tuple[np.ndarray, int, int]:
    indptr = np.frombuffer(payload, dtype="<u8", count=N + 1, offset=20)
    nnz = int(indptr[-1])
    return indptr, 20 + 8 * (N + 1), nnz


def test_a_forged_next_edge_fails_validate(original: bytes, tmp_path: Path) -> None:
    payload = take_apart(original).sections[GRAPH][1]
    _, targets, nnz = _graph_tables(payload)
    kinds = np.frombuffer(payload, dtype=np.uint8, count=nnz, offset=targets + 4 * nnz)
    first_next = int(np.flatnonzero(kinds == 0)[0])

    def edit(raw: bytearray) -> None:
        at = targets + 4 * first_next
        old = int.from_bytes(raw[at : at + 4], "little")
        raw[at : at + 4] = ((old + 1) % N).to_bytes(4, "little")

    _validate_fails(tmp_path, _with(original, GRAPH, edit), "graph: chunk")


def test_a_forged_semantic_edge_fails_validate(original: bytes, tmp_path: Path) -> None:
    payload = take_apart(original).sections[GRAPH][1]
    indptr, targets, nnz = _graph_tables(payload)
    kinds = np.frombuffer(payload, dtype=np.uint8, count=nnz, offset=targets + 4 * nnz)
    first = int(np.flatnonzero(kinds == 2)[0])  # chunk 0's first semantic edge
    assert first < int(indptr[1])

    def edit(raw: bytearray) -> None:
        at = targets + 4 * first
        old = int.from_bytes(raw[at : at + 4], "little")
        raw[at : at + 4] = (N - 1 if old != N - 1 else N - 2).to_bytes(4, "little")

    _validate_fails(tmp_path, _with(original, GRAPH, edit), "semantic edges")
