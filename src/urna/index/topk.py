"""Top k of a score vector, highest first, ties in file order (lower ordinal first)."""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best finite scores; among equal scores the lower index wins.

    A NaN or infinite score (a forged vector or weight) never ranks and never hides the
    others: the O(k) check below sends the rare case to a path that sets them aside.
    """
    idx = _top_k(scores, k)
    if len(idx) < min(k, len(scores)) or not np.all(np.isfinite(scores[idx])):
        bad = ~np.isfinite(scores)
        if bad.any():
            idx = _top_k(np.where(bad, -np.inf, scores), k)
            idx = idx[np.isfinite(scores[idx])]
    return idx


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    n = len(scores)
    if k >= n:
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(scores, n - k)[n - k :]
    threshold = scores[part].min()
    # Every index at or above the k-th score, in file order, so the cut keeps the earliest ties.
    candidates = np.flatnonzero(scores >= threshold)
    order = np.argsort(-scores[candidates], kind="stable")
    return candidates[order[:k]]
