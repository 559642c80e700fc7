"""One ranking order for a file and for any collection of the same sources: best score first,
ties by source_uri (as UTF-8 bytes), then by position.

A file stores its chunks by source_uri, then position in the source (``build/documents.py``), as
every shard does; so in a file, ties break by ordinal. A collection's global ordinals run
shard after shard, and sources are spread over shards by a hash, so ordinal order is not
source order there: among equal scores the merge looks up each tied chunk's source_uri
(only for ties that reach the cut) and sorts by it, then by ordinal, which within one
source is position order because a source lives in one shard.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

SourceOf = Callable[[np.ndarray], Sequence[str]]  # global ordinals -> their source_uris


def ranked(
    ordinals: np.ndarray, scores: np.ndarray, k: int, source_of: SourceOf | None = None
) -> np.ndarray:
    """Positions of the k best (ordinal, score) pairs in the one order: score descending,
    ties by ``source_of`` (when given), then by ordinal."""
    ordinals = np.asarray(ordinals, dtype=np.int64)
    keyed = -np.asarray(scores, dtype=np.float64)
    order = np.lexsort((ordinals, keyed))
    if source_of is None or len(order) < 2:
        return order[:k]
    sorted_scores = keyed[order]
    cuts = np.flatnonzero(sorted_scores[1:] != sorted_scores[:-1]) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(order)]))
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        if start >= k:
            break
        if end - start < 2:
            continue
        group = order[start:end]
        uris = source_of(ordinals[group])
        keys = sorted(
            range(len(group)), key=lambda j: (uris[j].encode("utf-8"), int(ordinals[group[j]]))
        )
        order[start:end] = group[keys]
    return order[:k]
