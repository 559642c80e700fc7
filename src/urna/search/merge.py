"""Merging ranked lists from the shards of a collection into one ranking, as one file ranks:
best score first, ties in (global) file order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from urna.search.result import Hit


def merge_top(
    parts: Sequence[tuple[np.ndarray, np.ndarray]], k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k best of several (global ordinals, scores) lists."""
    if not parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    idx = np.concatenate([np.asarray(p[0], dtype=np.int64) for p in parts])
    scores = np.concatenate([np.asarray(p[1]) for p in parts])
    order = np.lexsort((idx, -scores.astype(np.float64)))[:k]
    return idx[order], scores[order]


def merge_hits(parts: Sequence[tuple[int, list[Hit]]], k: int) -> list[Hit]:
    """The k best hits of several shards (each with its first global ordinal), re-ranked."""
    hits = [replace(h, ordinal=offset + h.ordinal) for offset, shard in parts for h in shard]
    hits.sort(key=lambda h: (-h.score, h.ordinal))
    return [replace(h, rank=r) for r, h in enumerate(hits[:k], 1)]
