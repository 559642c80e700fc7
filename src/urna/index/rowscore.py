"""The exact score of a stored row against a query: the same bits wherever the row is stored.

BLAS sums a row's products in an order that depends on where the row sits and how many rows
are scored with it (measured with OpenBLAS: about 1 row in 400 moved by an ulp when the same
matrix was sliced differently, and a single row goes through another kernel), so a file and
a collection of the same chunks, or two equal chunks, would score apart and swap ties. Here
a row's products are taken in float64 (exact for float32, float16 and int8 values), summed
by a fixed pairwise tree of elementwise additions, scaled (int8) and rounded once to
float32. Each step is one IEEE operation in a fixed order, so the score depends on the row
and the query alone, on any CPU. numpy has no reduction with a promised order, hence the
tree by hand.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from urna.format.embeddings import Matrix

BLOCK = 4096  # rows scored at a time (float64 products: 12 MiB at 384 dimensions)


def row_scores(matrix: Matrix, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The score of each row: float64 products, a fixed pairwise sum, one rounding."""
    rows = np.asarray(rows, dtype=np.int64)
    q = np.asarray(query, dtype=np.float64)
    out = np.empty(len(rows), dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # a forged row: top_k drops it
        for start in range(0, len(rows), BLOCK):
            part = rows[start : start + BLOCK]
            products = matrix.values[part].astype(np.float64) * q
            sums = _pairwise(products)
            if matrix.scales is not None:
                sums *= matrix.scales[part].astype(np.float64)
            out[start : start + len(part)] = sums
    return out


def scores_of(parts: Sequence[tuple[Matrix, np.ndarray]], query: np.ndarray) -> np.ndarray:
    """``row_scores`` of each (matrix, rows) part, concatenated: the same bits in one pass
    over a few rows of many shards (a pooled rerank), where a pass each paid numpy's fixed
    costs sixteen times."""
    total = sum(len(rows) for _, rows in parts)
    if total == 0:
        return np.empty(0, dtype=np.float32)
    if total > BLOCK:
        return np.concatenate([row_scores(m, rows, query) for m, rows in parts])
    q = np.asarray(query, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        values = [m.values[np.asarray(r, dtype=np.int64)].astype(np.float64) for m, r in parts]
        sums = _pairwise(np.concatenate(values) * q)
        start = 0
        for m, rows in parts:
            if m.scales is not None:
                sums[start : start + len(rows)] *= m.scales[rows].astype(np.float64)
            start += len(rows)
    return sums.astype(np.float32)


def _pairwise(products: np.ndarray) -> np.ndarray:
    """Row sums by halving: column j plus column j + w/2 (an odd last column joins column 0)."""
    p = products
    while p.shape[1] > 1:
        half = p.shape[1] // 2
        summed = p[:, :half] + p[:, half : 2 * half]
        if p.shape[1] % 2:
            summed[:, 0] += p[:, 2 * half]
        p = summed
    return p[:, 0] if p.shape[1] else np.zeros(len(p))
