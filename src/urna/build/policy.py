"""urna's merge policy: which shards to fold and which segments to merge. It only decides;
``build/compact.py`` carries the decision out.

It is a log-structured scheme, close to Lucene's LogMergePolicy (levels by size, a merge
factor), not its TieredMergePolicy (which budgets segments by bytes and scores merges).
The thresholds are urna's own:

- **fold** shard i when its pressure, (chunks deleted in it + live segment chunks of its
  bucket range) / its live chunks, exceeds ``FOLD_PRESSURE`` (1/3): the shard is rewritten
  with its live sources and the segments' sources of its range, which the segments then
  delete. ``everything`` (``urna compact``) folds every shard with any such chunk;
- **merge** segments level by level: a level holds the segments whose live chunks share a
  power of ten, and ``MERGE_FACTOR`` (10) segments of one level, the lowest first, are
  merged into one segment (of a higher level, usually);
- a segment with no live chunk is dropped.

``decide`` reads a catalog and what each segment holds (the bucket and live chunk count of
each of its sources, from its source table) and returns every fold and merge in the order
they are to run; a merge names segments by file, or by ``merged(k)``, the output of the
k-th merge before it.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from urna.format.catalog import Catalog

FOLD_PRESSURE = 1 / 3
MERGE_FACTOR = 10

Holdings = Mapping[str, Sequence[tuple[int, int]]]  # segment file -> (bucket, live chunks)


def merged(k: int) -> str:
    """How a decision names the segment the k-th merge writes."""
    return f"<merge {k}>"


@dataclass(frozen=True)
class Decision:
    folds: tuple[int, ...]  # the shards to fold, at once, first
    merges: tuple[tuple[str, ...], ...]  # then each merge's segments, in order

    def __bool__(self) -> bool:
        return bool(self.folds or self.merges)


def level(live: int) -> int:
    return int(math.log10(max(1, live)))


def loads(catalog: Catalog, holdings: Holdings) -> list[tuple[int, int]]:
    """Each shard's (deleted, incoming) chunks: deleted in it, and live in segments of its
    bucket range."""
    starts = [s.buckets[0] for s in catalog.shards]
    incoming = [0] * len(catalog.shards)
    for seg in catalog.segments:
        if seg.live <= 0:
            continue
        for bucket, chunks in holdings.get(seg.file or "", ()):
            incoming[bisect.bisect_right(starts, bucket) - 1] += chunks
    return [(s.n_chunks - s.live, incoming[i]) for i, s in enumerate(catalog.shards)]


def decide(catalog: Catalog, holdings: Holdings, *, everything: bool = False) -> Decision:
    """The folds and merges the policy makes of ``catalog`` (no I/O)."""
    shards = catalog.shards
    folds = tuple(
        i
        for i, (dead, new) in enumerate(loads(catalog, holdings))
        if (dead or new if everything else (dead + new) / max(1, shards[i].live) > FOLD_PRESSURE)
    )
    ranges = [shards[i].buckets for i in folds]
    segments: list[tuple[str, int]] = []  # (name, live chunks) after the folds
    for seg in catalog.segments:
        live = seg.live
        if live > 0 and ranges:
            live -= sum(
                chunks
                for bucket, chunks in holdings.get(seg.file or "", ())
                if any(lo <= bucket < hi for lo, hi in ranges)
            )
        if live > 0:
            segments.append((seg.file or "", live))
    merges: list[tuple[str, ...]] = []
    while True:
        levels: dict[int, list[int]] = {}
        for i, (_, live) in enumerate(segments):
            levels.setdefault(level(live), []).append(i)
        full = next((ids for _, ids in sorted(levels.items()) if len(ids) >= MERGE_FACTOR), None)
        if full is None:
            return Decision(folds, tuple(merges))
        group = full[:MERGE_FACTOR]
        merges.append(tuple(segments[i][0] for i in group))
        out = (merged(len(merges) - 1), sum(segments[i][1] for i in group))
        segments = [
            out if i == group[0] else s for i, s in enumerate(segments) if i not in group[1:]
        ]
