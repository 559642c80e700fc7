"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def per_query(fn: Callable[[Any], object], queries: Sequence[Any]) -> float:
    """Median seconds per query over the query set (after one untimed warm-up)."""
    fn(queries[0])
    times = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
