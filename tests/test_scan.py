"""Quantized exact scans: numkong's kernels, a bound, an exact rescoring. The top k must be
the widening scan's (ordinals in order, ties in file order) whatever the data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.format.embeddings import Matrix, encode, view
from urna.format.layout import Encoding
from urna.index import scan
from urna.index.exact import exact_top_k
from urna.index.topk import top_k

ENCODINGS = (Encoding.FLOAT16, Encoding.INT8)


def _matrix(m: np.ndarray, encoding: Encoding) -> Matrix:
    return view(memoryview(encode(m, encoding)), encoding, *m.shape)


def _unit(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=-1, keepdims=True)).astype(np.float32)


def _widening(matrix: Matrix, q: np.ndarray, k: int, allowed: np.ndarray | None = None):
    scores = matrix.dot(q)
    if allowed is None:
        idx = top_k(scores, k)
        return idx, scores[idx]
    best = top_k(scores[allowed], k)
    return allowed[best], scores[allowed][best]


def _same(got: tuple[np.ndarray, np.ndarray] | None, want: tuple[np.ndarray, np.ndarray]) -> None:
    """The same ranking; two rows may trade places only when their scores tie within
    float32 rounding (the two scans sum in different orders)."""
    assert got is not None
    assert np.allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    for a, b, score in zip(got[0].tolist(), want[0].tolist(), want[1].tolist(), strict=True):
        if a != b:
            assert abs(float(got[1][got[0].tolist().index(a)]) - score) <= 1e-6


@pytest.fixture(scope="module")
def clustered() -> np.ndarray:
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((40, 128)).astype(np.float32)
    m = centres[rng.integers(0, 40, 60_000)] + 0.2 * rng.standard_normal((60_000, 128))
    m[1000:1100] = m[500]  # exact duplicates: ties broken in file order
    return _unit(m)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_same_top_k_as_the_widening_scan(clustered: np.ndarray, encoding: Encoding) -> None:
    matrix = _matrix(clustered, encoding)
    rng = np.random.default_rng(1)
    for i in range(12):
        q = (
            clustered[500]
            if i == 0
            else _unit(clustered[rng.integers(0, 60_000)] + 0.1 * rng.standard_normal(128))
        )
        k = [1, 10, 100][i % 3]
        _same(scan.quantized_top_k(matrix, q, k), _widening(matrix, q, k))
        allowed = np.flatnonzero(rng.random(60_000) < 0.6)
        _same(scan.quantized_top_k(matrix, q, k, allowed), _widening(matrix, q, k, allowed))
        _same(exact_top_k(matrix, q, k, allowed), _widening(matrix, q, k, allowed))
    ties = scan.quantized_top_k(matrix, clustered[500], 50)
    assert ties is not None and ties[0].tolist() == [500, *range(1000, 1049)]  # file order
    assert len(set(ties[1].tolist())) == 1


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_rows_that_are_not_unit_stay_exact(clustered: np.ndarray, encoding: Encoding) -> None:
    m = clustered.copy()
    m[777] *= 40.0  # a finite row far off the unit sphere
    matrix = _matrix(m, encoding)
    q = _unit(m[777] + 0.5 * clustered[3])
    _same(scan.quantized_top_k(matrix, q, 10), _widening(matrix, q, 10))
    assert scan.max_norm(matrix) >= 39


def test_forged_scales_and_small_matrices_take_the_widening_scan(clustered: np.ndarray) -> None:
    payload = bytearray(encode(clustered, Encoding.INT8))
    payload[8 + 4 * 5 : 8 + 4 * 6] = np.float32(np.inf).tobytes()  # row 5's scale
    forged = view(memoryview(bytes(payload)), Encoding.INT8, *clustered.shape)
    assert scan.quantized_top_k(forged, clustered[5], 10) is None
    idx, scores = exact_top_k(forged, clustered[5], 10)
    assert 5 not in idx.tolist() and np.isfinite(scores).all()
    small = _matrix(clustered[: scan.MIN_ROWS - 1], Encoding.FLOAT16)
    assert scan.quantized_top_k(small, clustered[0], 10) is None
    assert scan.quantized_top_k(_matrix(clustered, Encoding.RAW), clustered[0], 10) is None


def test_a_kernel_that_disagrees_is_not_trusted(
    clustered: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numkong

    real = numkong.dot

    def noisy(a, b, out=None):  # type: ignore[no-untyped-def]
        real(a, b, out=out)
        out += np.float32(0.05)

    monkeypatch.setattr(numkong, "dot", noisy)
    matrix = _matrix(clustered, Encoding.FLOAT16)
    matrix.memo["max_norm"] = 1.0  # skip the norm pass (which also uses dot)
    assert scan.quantized_top_k(matrix, clustered[9], 10) is None
    monkeypatch.setattr(numkong, "dot", real)
    _same(exact_top_k(matrix, clustered[9], 10), _widening(matrix, clustered[9], 10))


def test_any_small_matrix() -> None:
    ran: list[bool] = []  # whether the quantized path answered (it may decline: None)

    @settings(max_examples=40, deadline=None)
    @given(
        seed=st.integers(0, 2**32 - 1),
        rows=st.integers(40, 400),
        dim=st.sampled_from([3, 8, 33, 64]),
        k=st.integers(1, 30),
        spread=st.sampled_from([0.0, 0.01, 1.0]),
    )
    def check(seed: int, rows: int, dim: int, k: int, spread: float) -> None:
        rng = np.random.default_rng(seed)
        base = rng.standard_normal((1, dim))
        noise = spread * rng.standard_normal((rows, dim)) + 1e-3 * rng.standard_normal((rows, dim))
        m = _unit(base + noise)
        q = _unit(rng.standard_normal(dim))
        for encoding in ENCODINGS:
            matrix = _matrix(m, encoding)
            got = scan.quantized_top_k(matrix, q, min(k, rows // 8))
            ran.append(got is not None)
            if got is not None:
                _same(got, _widening(matrix, q, min(k, rows // 8)))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "MIN_ROWS", 16)
        check()
    assert sum(ran) >= len(ran) // 5  # the quantized path answered often, not vacuously
