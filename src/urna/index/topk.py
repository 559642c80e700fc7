"""Top k of a score vector, highest first, ties in file order (lower ordinal first)."""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores; among equal scores the lower index wins."""
    n = len(scores)
    if k >= n:
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(scores, n - k)[n - k :]
    threshold = scores[part].min()
    # Every index at or above the k-th score, in file order, so the cut keeps the earliest ties.
    candidates = np.flatnonzero(scores >= threshold)
    order = np.argsort(-scores[candidates], kind="stable")
    return candidates[order[:k]]
