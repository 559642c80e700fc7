"""Asking N shards as one: which threads ask which shards, and which shard holds an ordinal.

Ordinals are global: shard after shard, in catalog order (``offsets``). A call on every
shard (``each``) runs in threads when the shards are worth it: remote shards always (each
call waits on another process, so they get a thread each), local shards once the smallest
holds ``PARALLEL_MIN`` chunks, cut into one run of neighbours per core. A call on the shards
holding some ordinals (``by_owner``) is one call per such shard, in threads when remote.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from urna.search.shard import Shard

T = TypeVar("T")
U = TypeVar("U")

PARALLEL_MIN = 20_000  # chunks in the smallest shard before threads pay (bench_fanout.py)
# Threads for remote shards, one a shard: each call waits on another process, not a core.
REMOTE_THREADS = 64


class Fanout:
    """The shards of one search core, their global ordinals, and the threads asking them."""

    def __init__(self, shards: Sequence[Shard]) -> None:
        self.shards = list(shards)
        self.offsets = np.cumsum([0] + [s.facts.n_chunks for s in self.shards])
        self.dim = self.shards[0].facts.dim
        self.remote = any(s.remote for s in self.shards)
        # Remote: a thread a shard; local: a run of neighbours a core.
        workers = min(len(self.shards), REMOTE_THREADS if self.remote else os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(workers, "urna-shard") if workers > 1 else None
        self._runs = runs_of(self.shards, workers)
        smallest = min(s.facts.n_chunks for s in self.shards)
        self.parallel = self.remote or smallest >= PARALLEL_MIN
        self.threads = "auto"  # or "always", "never" (benchmarks/bench_fanout.py compares)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def each(
        self, call: Callable[[Shard], T], *, threads: bool = True, pays: bool | None = None
    ) -> list[T]:
        """``call`` on every shard, in shard order: in parallel threads when there are
        several, ``threads`` allows it and the shards are worth it (``pays``, by default
        ``parallel``)."""
        worth = self.parallel if pays is None else pays
        chosen = {"always": True, "never": False}.get(self.threads, threads and worth)
        if self._pool is None or not chosen:
            return [call(s) for s in self.shards]
        runs = self._pool.map(lambda run: [call(s) for s in run], self._runs)
        return [answer for run in runs for answer in run]

    def fan(self, items: Sequence[U], call: Callable[[U], T]) -> list[T]:
        """``call`` on each of ``items`` (each naming shards to ask), in order: in parallel
        threads when the shards are remote, since each call then waits on another process
        (``threads = "never"``: one after another, which ``bench_ray_serve.py`` compares)."""
        if self._pool is None or not self.remote or self.threads == "never" or len(items) < 2:
            return [call(item) for item in items]
        return list(self._pool.map(call, items))

    def owners(self, ordinals: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """(shard, positions into ``ordinals``) for each shard holding any of them."""
        idx = np.asarray(ordinals, dtype=np.int64)
        if len(self.shards) == 1:
            return [(0, np.arange(len(idx)))] if len(idx) else []
        owner = np.searchsorted(self.offsets, idx, side="right") - 1
        return [(s, np.flatnonzero(owner == s)) for s in np.unique(owner).tolist()]

    def embeddings(self, ordinals: np.ndarray) -> np.ndarray:
        """The stored vectors of global ordinals, as float32 rows."""
        idx = np.asarray(ordinals, dtype=np.int64)
        out = np.zeros((len(idx), self.dim), dtype=np.float32)
        for at, found in self.by_owner(idx, lambda s, rows, _: self.shards[s].embeddings(rows)):
            out[at] = found  # one call per shard holding any (one remote call)
        return out

    def live_ordinals(self) -> np.ndarray:
        """The global ordinals of the chunks that count, ascending."""
        parts = [s.live_ordinals() + self.offsets[i] for i, s in enumerate(self.shards)]
        return np.concatenate(parts).astype(np.int64)

    def source_uris(self, ordinals: np.ndarray) -> list[str]:
        """The source_uri of each global ordinal (one call per shard holding any)."""
        idx = np.asarray(ordinals, dtype=np.int64)
        out = [""] * len(idx)
        for at, found in self.by_owner(idx, lambda s, rows, _: self.shards[s].source_uris(rows)):
            for j, uri in zip(at.tolist(), found, strict=True):
                out[j] = uri
        return out

    def by_owner(self, idx: np.ndarray, call: Callable[..., T]) -> list[tuple[np.ndarray, T]]:
        """(positions, ``call(shard, its rows, positions)``) for each shard holding any of
        the global ordinals ``idx``, shard being its index: one call per shard, in parallel
        threads when the shards are remote."""
        owned = self.owners(idx)
        answers = self.fan(
            owned, lambda part: call(part[0], idx[part[1]] - self.offsets[part[0]], part[1])
        )
        return [(at, answer) for (_, at), answer in zip(owned, answers, strict=True)]


def runs_of(shards: Sequence[Shard], workers: int) -> list[list[Shard]]:
    """The shards cut into up to ``workers`` runs of neighbours holding about as many
    chunks each, a thread asking its run's shards in turn: a query pays a thread's hand-off
    once a worker, not once a shard (16 walks of 6,250-chunk graphs: 2.5 against 3.0 ms),
    and the first failing shard's error still surfaces. Remote shards, whose calls wait on
    other processes, run one a thread."""
    if any(s.remote for s in shards):
        return [[s] for s in shards]
    total = sum(s.facts.n_chunks for s in shards) or 1
    runs: list[list[Shard]] = [[] for _ in range(max(1, workers))]
    before = 0
    for shard in shards:
        runs[min(len(runs) - 1, before * len(runs) // total)].append(shard)
        before += shard.facts.n_chunks
    return [run for run in runs if run]
