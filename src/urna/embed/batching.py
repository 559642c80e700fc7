"""Batches whose shapes depend on each text alone, so a vector never depends on its batch.

A transformer pads every text of a batch to one length. Padded positions are masked, but
the sums over a longer row (attention's softmax, its products) take another order, so the
same text padded to 64 and to 96 tokens gets vectors that differ in their last bits
(bfloat16: up to 9e-4 per component). Here a text is padded to its own length rounded up
to a multiple of ``BUCKET`` tokens, whatever else is embedded with it, and a batch holds
texts of one padded length only.

Every pass also has one shape for its length: ``ROWS`` texts, a short batch filled up with
copies of its last text (whose outputs are dropped). A matrix library picks kernels,
blockings and thread splits from a product's shape: OpenBLAS on an AVX2 EPYC gives a text
other bits in a pass over 20 texts than alone, and on one CI machine a 4-shard
collection's vectors differed from one file's, batches of 1 to 32 rows having passed the
batch test there. With one shape per length, nothing in a pass depends on how many texts
share it; and each pass runs on one thread (``embed/transformer.py``: oneDNN on an AVX-512
Xeon split a product by the thread count), so a text's vector is a function of (model,
precision, text): the cache may serve it, and a file, a collection, ``--jobs`` and Ray
embed the same bits (``tests/test_batching.py`` checks batchmates, row counts, thread
counts and processes on every run). On 2 cores, 512 scifact abstracts in float32 took 42 s
in batches of 32 rows, 34 s in batches of 8 and 37 s in passes of exactly 8 (filled), 43 s
one at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

BUCKET = 16
ROWS = 8
RECIPE = f"urna-length-buckets/2 bucket={BUCKET} rows={ROWS}"
ONE_ROW = f"urna-length-buckets/2 bucket={BUCKET} rows=1"  # int8: a pass per text (embed/int8.py)
RECIPES = (f"urna-length-buckets/1 bucket={BUCKET}", RECIPE, ONE_ROW)  # /1: read, not written


def padded_length(tokens: int, window: int) -> int:
    """The length a text of ``tokens`` tokens (special tokens included) is padded to."""
    return max(1, min(window, -(-tokens // BUCKET) * BUCKET))


def batches(
    lengths: Sequence[int], window: int, size: int = ROWS
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


def filled(rows: list[int], size: int = ROWS) -> list[int]:
    """A batch's positions filled up to ``size`` with repeats of its last one: the rows of
    one pass (the first ``len(rows)`` outputs are the batch's)."""
    return rows + [rows[-1]] * (size - len(rows))
