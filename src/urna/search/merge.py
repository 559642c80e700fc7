"""Merging ranked lists from the shards of a collection into one ranking, in the one order
of ``search/order.py`` (score, then source_uri, then position)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from urna.search.order import SourceOf, ranked
from urna.search.result import Hit


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


def merge_hits(parts: Sequence[tuple[int, list[Hit]]], k: int) -> list[Hit]:
    """The k best hits of several shards (each with its first global ordinal), re-ranked."""
    hits = [replace(h, ordinal=offset + h.ordinal) for offset, shard in parts for h in shard]
    ordinals = np.array([h.ordinal for h in hits], dtype=np.int64)
    scores = np.array([h.score for h in hits], dtype=np.float64)
    uris = {h.ordinal: h.source_uri for h in hits}
    order = ranked(ordinals, scores, k, lambda at: [uris[int(i)] for i in at])
    return [replace(hits[j], rank=r) for r, j in enumerate(order.tolist(), 1)]
