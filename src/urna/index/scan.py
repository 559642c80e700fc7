"""Exact top k over float16 and int8 matrices at memory speed.

A float16 or int8 scan reads 2x or 4x fewer bytes than float32, but widening each block to
float32 for BLAS made it slower than float32. Here numkong's SIMD kernels score the stored
values directly, on every core, against the query rounded to the stored type; then every
row that could still be in the exact top k is rescored exactly:

1. ``a_r``: row r's score against the rounded query q' (float16: q' = f16(q); int8:
   q' = s_q * round(q / s_q) with s_q = max|q| / 127), accumulated in float32 or int32.
2. ``|a_r - e_r| <= B = max_r |v_r| * (|q - q'| + 4 d 2**-24 |q|)`` where ``e_r`` is the
   exact score (the stored row, widened, against q, as ``Matrix.dot`` computes it):
   Cauchy-Schwarz on the rounding of q, plus float32 accumulation in both computations.
   The largest stored row norm is computed once per open matrix.
3. The k rows with the best ``a_r`` score at least ``a_k - B`` exactly (``a_k`` the k-th
   best), so only rows with ``a_r >= a_k - 2B`` can be in the exact top k. Those are
   rescored exactly (``exact.row_scores``: float64 products, a fixed pairwise sum), in file
   order, and ``top_k`` picks the k best (ties in file order).

The result is the exact scan's. The kernels are checked against the exact scores on the
first rows of each matrix before they are trusted; without numkong, on a small matrix, or
when the bound keeps too many rows, the caller's exact scan runs instead.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from urna.format.embeddings import Matrix
from urna.format.layout import Encoding
from urna.index.rowscore import row_scores
from urna.index.topk import kth_largest, largest, top_k
from urna.native import one_blas_thread

MIN_ROWS = 32768  # below this, the widening scan is as fast
CHUNK = 65536  # rows per task
CHECK_ROWS = 2048  # rows compared with the exact scores before a kernel is trusted
_ACCUMULATION = 4 * 2.0**-24
WORKERS = max(1, os.cpu_count() or 1)
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _kernels() -> Any:
    try:
        import numkong
    except ImportError:  # pragma: no cover - usearch brings it
        return None
    return numkong


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, "urna-scan")
        return _pool


def _parallel(fn: Any, n: int) -> None:
    """``fn(start, stop)`` over [0, n) in about CHUNK-row chunks, as many for every core."""
    pool = _executor()
    parts = max(1, round(n / CHUNK / WORKERS)) * WORKERS  # an idle thread takes the next
    step = max(1, -(-n // parts))
    futures = [pool.submit(fn, s, min(n, s + step)) for s in range(0, n, step)]
    for f in futures:
        f.result()


def float32_scores(values: np.ndarray, q: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``values @ q`` for float32 rows (the float32 scan's scores): BLAS on one thread per
    block (``urna/native.py``), a large matrix in blocks on every core of the scan pool."""
    n = len(values)
    out = np.empty(n, dtype=np.float32) if out is None else out
    with one_blas_thread(), np.errstate(over="ignore", invalid="ignore"):
        if n < MIN_ROWS or WORKERS == 1:
            np.matmul(values, q, out=out)
        else:
            _parallel(lambda start, stop: np.matmul(values[start:stop], q, out=out[start:stop]), n)
    return out


def _rounded_query(matrix: Matrix, q: np.ndarray) -> tuple[np.ndarray, float, np.ndarray] | None:
    """(the query in the stored type, the factor its scores take, q - q' as float64)."""
    if matrix.encoding == Encoding.FLOAT16:
        q16 = q.astype(np.float16)
        if not np.isfinite(q16).all():
            return None
        return q16, 1.0, q.astype(np.float64) - q16.astype(np.float64)
    peak = float(np.max(np.abs(q))) if len(q) else 0.0
    if not peak > 0 or not np.isfinite(peak):
        return None
    s_q = peak / 127.0
    codes = np.clip(np.rint(q.astype(np.float64) / s_q), -127, 127).astype(np.int8)
    return codes, s_q, q.astype(np.float64) - codes.astype(np.float64) * s_q


def _approximate(
    matrix: Matrix, rounded: np.ndarray, rows: int, k: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Every row's approximate score divided by the query's factor (a positive constant
    applied to thresholds instead), and (with ``k``) each chunk's k best of them: both
    computed chunk by chunk on every core, while the chunk is in cache."""
    out = np.empty(rows, dtype=np.float32)
    tops: list[np.ndarray] = []

    def part(start: int, stop: int) -> None:
        scores = _score_block(matrix, rounded, out, start, stop)
        if k:
            keep = min(k, stop - start)
            tops.append(largest(scores, keep))

    _parallel(part, rows)
    return out, (np.concatenate(tops) if tops else np.empty(0, np.float32))


def _score_block(
    matrix: Matrix, rounded: np.ndarray, out: np.ndarray, start: int, stop: int
) -> np.ndarray:
    """Rows [start, stop) scored by the kernel against the rounded query, into ``out``."""
    scores = out[start:stop]
    _kernels().dot(matrix.values[start:stop], rounded, out=scores)
    if matrix.scales is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            scores *= matrix.scales[start:stop]
    return scores


def approximate_all(jobs: list[tuple[Matrix, np.ndarray, np.ndarray]]) -> None:
    """Each (matrix, rounded query, out) as ``_approximate`` scores it, every matrix's blocks
    submitted to the pool at once: one wait for all of a collection's shards, an idle thread
    taking the next block of any of them (a wait per shard left a core idle at each)."""
    pool = _executor()
    step = max(1, CHUNK // 2)
    futures = [
        pool.submit(_score_block, matrix, rounded, out, start, min(matrix.n, start + step))
        for matrix, rounded, out in jobs
        for start in range(0, matrix.n, step)
    ]
    for f in futures:
        f.result()


def max_norm(matrix: Matrix) -> float:
    """The largest stored row's L2 norm (int8: times its scale), once per open matrix."""
    found = matrix.memo.get("max_norm")
    if found is not None:
        return float(found)
    kernels = _kernels()
    squares = np.empty(matrix.n, dtype=np.float32)
    values = matrix.values

    def part(start: int, stop: int) -> None:
        block = values[start:stop]
        if kernels is None:
            wide = block.astype(np.float32)
            squares[start:stop] = np.einsum("ij,ij->i", wide, wide)
        else:
            kernels.dot(block, block, out=squares[start:stop])

    _parallel(part, matrix.n)
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(squares.astype(np.float64))
        if matrix.scales is not None:
            norms *= matrix.scales
        peak = float(np.max(norms)) if matrix.n else 0.0
    peak = peak * (1 + 1e-6) if np.isfinite(peak) else float("inf")
    matrix.memo["max_norm"] = peak
    return peak


def _bound(matrix: Matrix, delta: np.ndarray, q: np.ndarray) -> float:
    """B: no row's approximate score is further than this from its exact score."""
    dim = len(q)
    slack = float(np.linalg.norm(delta)) + _ACCUMULATION * dim * float(np.linalg.norm(q))
    return max_norm(matrix) * slack * (1 + 1e-6) + 1e-30


def _trusted(
    matrix: Matrix, q: np.ndarray, rounded: np.ndarray, factor: float, bound: float
) -> bool:
    """The kernel agrees with the exact scores within the bound on the first rows."""
    key = ("trusted", matrix.encoding)
    if key not in matrix.memo:
        rows = min(matrix.n, CHECK_ROWS)
        approx, _ = _approximate(matrix, rounded, rows)
        approx = approx * np.float32(factor)
        with np.errstate(over="ignore", invalid="ignore"):
            exact = matrix.rows(slice(0, rows)) @ q
        finite = np.isfinite(exact) & np.isfinite(approx)
        matrix.memo[key] = bool(np.all(np.abs(approx - exact)[finite] <= bound))
    return bool(matrix.memo[key])


def trusted_query(matrix: Matrix, q: np.ndarray) -> tuple[np.ndarray, float, float] | None:
    """(the query in the stored type, its factor, the bound B) for a quantized matrix whose
    kernel agrees with the exact scores; None where it cannot be used."""
    prepared = _rounded_query(matrix, q)
    if prepared is None:
        return None
    rounded, factor, delta = prepared
    own = _bound(matrix, delta, q)
    if not np.isfinite(own) or not _trusted(matrix, q, rounded, factor, own):
        return None
    return rounded, factor, own


def quantized_top_k(
    matrix: Matrix,
    query: np.ndarray,
    k: int,
    allowed: np.ndarray | None = None,
    *,
    scored_by: Matrix | None = None,
    off_by: float = 0.0,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact top k (ordinals, scores) of a float16 or int8 matrix, or None when the
    caller's exact scan should run (float32, small, no kernels, a forged row, or a bound
    too loose to pay). With ``scored_by`` (the float32 rows ``matrix`` is a copy of, each
    copied row's score within ``off_by`` of its original's), the candidates are scored
    exactly by those rows: the exact top k of ``scored_by``."""
    n = matrix.n
    if matrix.encoding == Encoding.RAW or n < MIN_ROWS or _kernels() is None or k > n // 8:
        return None
    q = np.asarray(query, dtype=np.float32)
    prepared = trusted_query(matrix, q)
    if prepared is None:
        return None
    rounded, factor, own = prepared
    bound = own + off_by
    if allowed is None:
        approx, tops = _approximate(matrix, rounded, n, k)
        kth = kth_largest(tops, k)
    else:
        approx, _ = _approximate(matrix, rounded, n)
        keep = np.zeros(n, dtype=bool)
        keep[allowed] = True
        approx[~keep] = -np.inf
        kth = kth_largest(approx, k)
    if not np.isfinite(kth):  # a NaN or infinite score (a forged row), or too few rows kept
        return None
    # The k rows above kth score at least kth - B exactly; a row can beat that only if its
    # approximate score is at least kth - 2B (both sides here divided by the factor).
    candidates = np.flatnonzero(approx >= kth - 2 * bound / factor)
    if len(candidates) * 4 > n:
        return None
    scores = row_scores(scored_by or matrix, candidates, q)
    best = top_k(scores, k)
    return candidates[best], scores[best]
