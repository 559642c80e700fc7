"""The exact path: one matrix-vector product over every stored vector, then top k."""

from __future__ import annotations

import numpy as np

from urna.format.embeddings import Matrix
from urna.search.topk import top_k


def exact_scores(matrix: Matrix, query: np.ndarray) -> np.ndarray:
    """Cosine of a unit query against every (unit, stored-precision) row."""
    return matrix.dot(query)


def exact_top_k(matrix: Matrix, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(ordinals, scores) of the k best rows, ties in file order."""
    scores = exact_scores(matrix, query)
    idx = top_k(scores, k)
    return idx, scores[idx]
