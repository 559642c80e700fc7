"""Merging ranked lists from the shards of a collection into one ranking, in the one order
of ``search/order.py`` (score, then source_uri, then position)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from urna.search.order import SourceOf, ranked


def merge_top(
    parts: Sequence[tuple[np.ndarray, np.ndarray]], k: int, source_of: SourceOf | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The k best of several (global ordinals, scores) lists."""
    if not parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    idx = np.concatenate([np.asarray(p[0], dtype=np.int64) for p in parts])
    scores = np.concatenate([np.asarray(p[1]) for p in parts])
    order = ranked(idx, scores, k, source_of)
    return idx[order], scores[order]
