"""The exact path: a scan that bounds every row's score, then each row that could be in the
top k scored exactly; and the full-precision rerank copy (section 0x09) when the file keeps
one.

Every score returned is ``rowscore.row_scores``: a function of the stored row and the query
alone, so a file and a collection of the same chunks, or two equal chunks, score the same
bits. The scan (BLAS, or the quantized kernels of ``index/scan.py``) only chooses which rows
to score so: every row within twice its proven error of the k-th best.
"""

from __future__ import annotations

import numpy as np

from urna.errors import FormatError
from urna.format.embeddings import Matrix
from urna.format.embeddings import view as view_matrix
from urna.format.layout import Encoding, SectionId, section_label
from urna.format.reader import Container
from urna.index.rowscore import row_scores
from urna.index.scan import float32_scores, max_norm, quantized_top_k
from urna.index.shadow import shadow_top_k
from urna.index.topk import kth_largest, top_k
from urna.native import one_blas_thread

_ACCUMULATION = 4 * 2.0**-24  # per term: a float32 sum of d products is off by <= d u |v||q|


def exact_top_k(
    matrix: Matrix, query: np.ndarray, k: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(ordinals, scores) of the k best rows by ``row_scores``, ties in file order.

    ``allowed`` (sorted ordinals) restricts the search to those rows, exactly: the k best
    among them, however few they are.
    """
    fast = None
    if allowed is None or len(allowed) * 4 >= matrix.n:
        fast = quantized_top_k(matrix, query, k, allowed) or shadow_top_k(matrix, query, k, allowed)
    if fast is not None:
        return fast
    q = np.asarray(query, dtype=np.float32)
    candidates, _, _ = scanned(matrix, q, k, allowed)
    scores = row_scores(matrix, candidates, q)
    best = top_k(scores, k)
    return candidates[best], scores[best]


def scanned(
    matrix: Matrix, query: np.ndarray, k: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """The float32 scan's choice: (ordinals ascending, their approximate scores, the bound)
    of every row (among ``allowed``) whose ``row_scores`` could be among the k best, each
    approximate score within the bound of it. A collection merges these across shards
    before scoring any row exactly (``search/core.py``)."""
    q = np.asarray(query, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        if allowed is None:
            rows, approx = None, _scores(matrix, q)
        elif len(allowed) * 4 < matrix.n:  # selective: scan only the allowed rows
            rows, approx = allowed, float32_scores(matrix.rows(allowed), q)
        else:
            rows, approx = allowed, _scores(matrix, q)[allowed]
    bound = scan_bound(matrix, q)
    picked = within_bound(approx, k, bound)
    return (picked if rows is None else rows[picked]), approx[picked], bound


def _scores(matrix: Matrix, q: np.ndarray) -> np.ndarray:
    if matrix.encoding == Encoding.RAW:
        return float32_scores(matrix.values, q)
    with one_blas_thread():
        return matrix.dot(q)


def scan_bound(matrix: Matrix, q: np.ndarray) -> float:
    """No row's scanned (float32) score is further than this from its ``row_scores``."""
    slack = _ACCUMULATION * len(q) * float(np.linalg.norm(q))
    return max_norm(matrix) * slack * (1 + 1e-6) + 1e-30


def within_bound(approx: np.ndarray, k: int, bound: float) -> np.ndarray:
    """Positions (ascending) of every score that could still be among the k best once each
    is known to within ``bound``: at or above the k-th best finite score minus 2 bounds."""
    finite = np.isfinite(approx)
    count = int(np.count_nonzero(finite))
    if count <= k or not np.isfinite(bound):
        return np.flatnonzero(finite) if np.isfinite(bound) else np.arange(len(approx))
    keyed = approx if count == len(approx) else np.where(finite, approx, -np.inf)
    kth = kth_largest(keyed, k)
    return np.flatnonzero(keyed >= kth - 2 * bound)


def rerank_top(
    matrix: Matrix, candidates: np.ndarray, query: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k best of distinct candidates by ``row_scores`` over ``matrix``, ties in file
    order."""
    order = np.sort(candidates)
    scores = row_scores(matrix, order, query)
    best = top_k(scores, k)
    return order[best], scores[best]


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
