"""An int8 shadow of a float32 matrix: the exact scan at a quarter of the bytes.

A float32 file's exact search reads every row, 4 bytes a value, on every vector and hybrid
query (a file built without ``fusion.feedback.pool`` reads them twice a hybrid query). Once
an open matrix has answered ``AFTER`` exact queries (a server, a notebook, a batch: not a
one-shot command, where making the copy would cost more than it saves), it is copied once
into int8 in memory (per-row scales, ``format/embeddings.py``'s quantization) and each later
query's candidates are chosen by numkong's int8 kernels over the copy (``index/scan.py``),
then scored exactly by the float32 rows. The answer is the float32 scan's, bit for bit:

- the kernel's score of a copied row is within ``B`` of the copied row's exact score
  (``scan.py``'s bound: the query's rounding and float32 accumulation);
- the copied row's exact score is within ``E |q|`` of the original row's, ``E`` the
  largest distance between a row and its copy, measured here as the copy is made (float64),
  never read from a file;
- so only rows whose kernel score reaches the k-th best minus ``2 (B + E |q|)`` can be in the
  exact top k; they are scored by the float32 rows (``rowscore.row_scores``), ties in file
  order.

The copy costs n x (dim + 4) bytes of memory (77 MB for 200,000 chunks of 384 dimensions);
``URNA_SHADOW=0`` turns it off. A matrix with a non-finite row gets none.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from urna.format.embeddings import Matrix, quantize_int8
from urna.format.layout import Encoding
from urna.index.scan import MIN_ROWS, approximate_all, quantized_top_k, trusted_query

AFTER = 2  # exact queries an open matrix answers before it is copied
BLOCK = 65536  # rows quantized at a time
VARIABLE = "URNA_SHADOW"
_making = threading.Lock()


def enabled() -> bool:
    return os.environ.get(VARIABLE, "1").strip() != "0"


def shadow(matrix: Matrix) -> tuple[Matrix, float] | None:
    """The int8 copy of a float32 matrix and its largest row error, once the matrix has
    answered ``AFTER`` exact queries; None before, for a small or quantized matrix, or off."""
    if matrix.encoding != Encoding.RAW or matrix.n < MIN_ROWS or not enabled():
        return None
    memo = matrix.memo
    if "shadow" in memo:
        return memo["shadow"]
    memo["asked"] = memo.get("asked", 0) + 1
    if memo["asked"] < AFTER:
        return None
    with _making:
        if "shadow" not in memo:
            memo["shadow"] = _made(matrix)
    return memo["shadow"]


def _made(matrix: Matrix) -> tuple[Matrix, float] | None:
    n, dim = matrix.n, matrix.dim
    codes = np.empty((n, dim), dtype=np.int8)
    scales = np.empty(n, dtype=np.float32)
    worst = 0.0
    for start in range(0, n, BLOCK):
        block = matrix.rows(slice(start, start + BLOCK))
        if not np.isfinite(block).all():
            return None
        s, c = quantize_int8(block)
        scales[start : start + len(block)], codes[start : start + len(block)] = s, c
        error = block.astype(np.float64) - c.astype(np.float64) * s.astype(np.float64)[:, None]
        worst = max(worst, float(np.sqrt(np.max(np.einsum("ij,ij->i", error, error)))))
    return Matrix(Encoding.INT8, codes, scales), worst * (1 + 1e-6) + 1e-30


def shadow_top_k(
    matrix: Matrix, query: np.ndarray, k: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact top k of a float32 matrix through its shadow, or None (no shadow yet, or
    the bound keeps too many rows: the caller scans)."""
    found = shadow(matrix)
    if found is None:
        return None
    copy, error = found
    off_by = error * float(np.linalg.norm(np.asarray(query, dtype=np.float64)))
    return quantized_top_k(copy, query, k, allowed, scored_by=matrix, off_by=off_by)


def shadow_scores(matrix: Matrix, query: np.ndarray) -> tuple[np.ndarray, float] | None:
    """Every row's approximate score through the shadow, and how far any is from the
    float32 row's exact score; None without a shadow or with an untrusted kernel."""
    return shadow_scans([matrix], query)[0]


def shadow_scans(
    matrices: list[Matrix], query: np.ndarray
) -> list[tuple[np.ndarray, float] | None]:
    """``shadow_scores`` of each of several float32 matrices (a collection's shards, cut at
    once by ``search/pooled.py``), those with a shadow scanned in one submission to the
    pool; None for each without one (or with an untrusted kernel, or a non-finite score)."""
    q = np.asarray(query, dtype=np.float32)
    jobs, known = [], []
    for at, matrix in enumerate(matrices):
        found = shadow(matrix)  # each matrix counts the query, shadowed or not
        prepared = None if found is None else trusted_query(found[0], q)
        if found is not None and prepared is not None:
            rounded, factor, own = prepared
            jobs.append((found[0], rounded, np.empty(found[0].n, dtype=np.float32)))
            known.append((at, factor, own, found[1]))
    approximate_all(jobs)
    out: list[tuple[np.ndarray, float] | None] = [None] * len(matrices)
    norm = float(np.linalg.norm(q.astype(np.float64)))
    for (_, _, approx), (at, factor, own, error) in zip(jobs, known, strict=True):
        with np.errstate(over="ignore", invalid="ignore"):
            approx *= np.float32(factor)  # one more float32 rounding, bounded below
            peak = float(np.max(np.abs(approx))) if len(approx) else 0.0
        if np.isfinite(peak):
            out[at] = (approx, own + error * norm + peak * 2.0**-22)
    return out
