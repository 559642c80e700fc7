"""Batches whose shapes depend on each text alone, so a vector never depends on its batch.

A transformer pads every text of a batch to one length. Padded positions are masked, but
the sums over a longer row (attention's softmax, its products) take another order, so the
same text padded to 64 and to 96 tokens gets vectors that differ in their last bits
(bfloat16: up to 9e-4 per component). Here a text is padded to its own length rounded up
to a multiple of ``BUCKET`` tokens, whatever else is embedded with it, and a batch holds
texts of one padded length only. Batchmates, batch size and thread count were measured to
change no bit at a fixed padded length (``tests/test_batching.py`` checks it on every run),
so a text's vector is a function of (model, precision, text): the cache may serve it, and
a file, a collection, ``--jobs`` and Ray embed the same bits.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

BUCKET = 16
BATCH = 32
RECIPE = f"urna-length-buckets/1 bucket={BUCKET}"
RECIPES = (RECIPE,)


def padded_length(tokens: int, window: int) -> int:
    """The length a text of ``tokens`` tokens (special tokens included) is padded to."""
    return max(1, min(window, -(-tokens // BUCKET) * BUCKET))


def batches(
    lengths: Sequence[int], window: int, size: int = BATCH
) -> Iterator[tuple[int, list[int]]]:
    """(padded length, positions) batches covering every text once: each batch holds up to
    ``size`` texts of one padded length, in order of that length, then of position."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(padded_length(n, window), []).append(i)
    for length in sorted(groups):
        rows = groups[length]
        for start in range(0, len(rows), size):
            yield length, rows[start : start + size]
