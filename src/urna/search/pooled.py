"""A collection's local shards asked as one: the fixed costs of a vector query paid once.

Asked one by one, each of n shards scores its own k best exactly and each reranks its own
HNSW candidates, so a query pays n exact passes and n reranks where one file pays one.
Here the shards only propose, and the core decides once:

- ``one_exact_pass``: each float32 shard's scan proposes rows with approximate scores a,
  each within its scan's proven bound b of the exact score (``index/exact.py``). A row
  can be among the best only if a + b reaches the depth-th best of every a - b, so only
  those rows are scored exactly. The answer is, bit for bit, the merge of each shard's
  exact top (``tests/test_fanout.py`` checks it under hypothesis).
- ``one_text_pass``: the query terms' postings over every shard are added into one
  array, and one top is taken over it, as one file takes its own (a shard alone would
  select its own depth best first). What is added first is each posting's upper bound
  under the collection's statistics (its stored weight times its shard's factor); only
  the chunks whose bound reaches what the rarest query term's chunks surely score
  (``index/bm25.py``'s ``above_seed``, with the bounds) are weighed exactly, the float64
  weighing that cost a million-chunk collection most of its BM25 time. Ties at the cut
  go by source, then position, as the merge orders them.
- ``pooled_walk``: each shard's graph is walked (in threads where they pay), the
  candidates pooled, and the 2 max(ef, k) nearest by the graphs' own distances reranked
  exactly, as one file reranks its own 2 max(ef, k), and ranked once.

Each returns None where a shard cannot take part (remote, quantized, no graph, a filter,
an untrusted graph, a non-finite score): the core then asks each shard alone.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from urna.format.embeddings import Matrix
from urna.format.layout import Encoding
from urna.index.bm25 import above_seed
from urna.index.bm25_global import TermStats
from urna.index.exact import scan_bound, within_bound
from urna.index.rowscore import scores_of
from urna.index.scan import float32_scores
from urna.index.shadow import shadow_scans
from urna.index.topk import kth_largest, top_k
from urna.search.filters import Filter
from urna.search.merge import merge_top
from urna.search.order import ranked
from urna.search.postings import CollectionPostings, Term
from urna.search.shard import RERANK_FACTOR, Pair, Ranking, Shard


class Searcher(Protocol):
    """What of the core (``search/core.py``) this module uses."""

    shards: list[Shard]
    offsets: np.ndarray
    remote: bool
    parallel: bool
    postings: CollectionPostings

    def source_uris(self, ordinals: np.ndarray) -> list[str]: ...

    def each(
        self, call: Callable[[Shard], Any], *, threads: bool = True, pays: bool | None = None
    ) -> Sequence[Any]: ...


# HNSW walks are short and release the GIL: threads paid from 100,000 chunks in 16 shards
# (4.8 against 6.4 ms a query, bench_fanout.py --docs 100000 --shards 16).
WALK_PARALLEL_MIN = 50_000


def one_exact_pass(
    searcher: Searcher, q: np.ndarray, depth: int, kept: Filter | None
) -> Pair | None:
    """The exact top ``depth`` of local float32 shards, scoring exactly only the rows that
    can reach it (a shard alone keeps its own depth best of those)."""
    shards = searcher.shards
    if any(getattr(s, "vector_scan", None) is None for s in shards):
        return None
    local: list[Any] = list(shards)  # FileShards: vector_scan is there
    kept_rows = _scan_whole(local, searcher.offsets, q, depth) if kept is None else None
    if kept_rows is None:
        parts = [s.vector_scan(q, depth, kept) for s in local]
        if any(p is None for p in parts):
            return None
        lows = []
        for _, approx, bound in parts:
            if not (math.isfinite(bound) and np.isfinite(approx).all()):
                return None
            lows.append(approx - bound)
        low = np.concatenate(lows)
        floor = -np.inf if len(low) <= depth else kth_largest(low, depth)
        kept_rows = [
            (local[s].matrix, rows[approx + bound >= floor])
            for s, (rows, approx, bound) in enumerate(parts)
        ]
    scored = scores_of(kept_rows, q)  # each shard's bits, in one pass
    pairs, start = [], 0
    for s, (_, keep) in enumerate(kept_rows):
        scores = scored[start : start + len(keep)]
        start += len(keep)
        best = top_k(scores, depth)  # a shard's ties in its own order, as its own top
        pairs.append((keep[best] + searcher.offsets[s], scores[best]))
    return merge_top(pairs, depth, searcher.source_uris)


def _scan_whole(
    shards: list[Any], offsets: np.ndarray, q: np.ndarray, depth: int
) -> list[tuple[Matrix, np.ndarray]] | None:
    """Unfiltered float32 shards with no deletions scanned into one array, as one file is,
    and cut once at the widest shard's bound (a superset of the rows each shard's own cut
    keeps, so the same top): each shard's (matrix, candidate rows); None otherwise."""
    matrices = [s.matrix for s in shards]
    if any(m.encoding != Encoding.RAW for m in matrices):
        return None
    if any(s.filtered(None) is not None for s in shards):
        return None
    approx = np.empty(int(offsets[-1]), dtype=np.float32)
    bounds = []
    scans = shadow_scans(matrices, q)  # each one's int8 copy, once it has one
    with np.errstate(over="ignore", invalid="ignore"):
        for s, (matrix, shadowed) in enumerate(zip(matrices, scans, strict=True)):
            if shadowed is not None:
                approx[offsets[s] : offsets[s + 1]], scanned_off = shadowed
            else:
                float32_scores(matrix.values, q, out=approx[offsets[s] : offsets[s + 1]])
                scanned_off = scan_bound(matrix, q)
            bounds.append(scanned_off)
    bound = max(bounds)
    if not (math.isfinite(bound) and np.isfinite(approx).all()):
        return None  # a forged row: each shard's own scan sets it aside
    picked = within_bound(approx, depth, bound)
    cuts = np.searchsorted(picked, offsets)
    return [(m, picked[cuts[s] : cuts[s + 1]] - offsets[s]) for s, m in enumerate(matrices)]


def one_text_pass(
    searcher: Searcher, tokens: Sequence[str], stats: TermStats, depth: int, kept: Filter | None
) -> Pair | None:
    """BM25's top ``depth`` (scores above 0) over local shards' chunks, scored into one
    array from the collection's postings; None with a filter or a shard that cannot give
    its postings. A long posting list seen for the first time is added as its bounds
    (``_bounded_top``), every other as its exact weights."""
    postings = searcher.postings
    if kept is not None or not postings.usable():
        return None
    terms = []
    for token, count in Counter(tokens).items():
        got = postings.bounded(token, stats)  # (rows, weights or bounds, term or None)
        if got is not None:
            terms.append((token, *got, count))
    pool = np.zeros(int(searcher.offsets[-1]), dtype=np.float32)
    for _, rows, weights, _, count in terms:
        at = rows.astype(np.intp, copy=False)  # a stored u32 cast once, not per fancy index
        pool[at] += weights if count == 1 else weights * np.float32(count)
    if any(term is not None for _, _, _, term, _ in terms):
        return _bounded_top(searcher, terms, pool, stats, depth)
    seed = _seed(terms, stats, depth)
    hit = above_seed(pool, depth, None if seed is None else seed[1])
    want = depth
    if hit is None:
        matched = int(np.count_nonzero(pool))
        if matched == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        want = min(depth, matched)
        hit = np.flatnonzero(pool) if matched * 4 < len(pool) else None  # few: among them
    threshold = kth_largest(pool if hit is None else pool[hit], want)
    chosen = np.flatnonzero(pool >= threshold) if hit is None else hit[pool[hit] >= threshold]
    scores = pool[chosen]
    if not (np.isfinite(threshold) and threshold > 0 and np.isfinite(scores).all()):
        return None  # a forged weight: the shards' own tops set it aside
    order = ranked(chosen, scores, depth, searcher.source_uris)
    return chosen[order], scores[order]


Terms = list[tuple[str, np.ndarray, np.ndarray, Term | None, int]]


def _bounded_top(
    searcher: Searcher, terms: Terms, pool: np.ndarray, stats: TermStats, depth: int
) -> Pair | None:
    """``one_text_pass``'s answer, bit for bit, from a pool holding upper bounds: a bounded
    term's weights are at most its stored weights times its shard's factor
    (``index/bm25_tables.py``, ``Tables.upper``: one multiply per posting, no float64
    weighing) and at least its shard's ``least`` times that. Only the rows whose bound
    reaches the depth-th best lower bound among the seed's rows (``above_seed``'s seed: a
    deleted chunk's bound is 0) can rank; only their postings are weighed, and added in
    the pool's order (so the same float32 sums). None for a score that is not finite (the
    shards' own tops set it aside).
    """
    if not np.isfinite(pool).all():
        return None
    # Each sum is within (1 + eps) of its exact value: float32 roundings, a few per term.
    eps = (sum(t[4] for t in terms) + 8) * 2.0**-20
    seed = _seed(terms, stats, depth)
    hit = None
    if seed is not None:  # the depth-th best seed row surely scores low: so must any that ranks
        term, rows = seed
        least = searcher.postings.tables.least(stats, None if term is None else term.shards)
        low = kth_largest(pool[rows], depth) * least
        if low > 0:
            hit = np.flatnonzero(pool >= low * (1 - eps) / (1 + 2 * eps))
    if hit is None:
        hit = np.flatnonzero(pool)
    if len(hit) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    theres, picked, known = [], [], []
    for _, rows, weights, term, _ in terms:
        at = np.minimum(np.searchsorted(rows, hit), len(rows) - 1)
        there = rows[at] == hit
        theres.append(there)
        if term is None:
            known.append(weights[at[there]])
        else:
            picked.append((term, at[there]))
    weighed = iter(searcher.postings.tables.weighed_at(picked, stats) if picked else [])
    exact = iter(known)
    scores = np.zeros(len(hit), dtype=np.float32)
    for (_, _, _, term, count), there in zip(terms, theres, strict=True):
        found = next(exact) if term is None else next(weighed)
        scores[there] += found if count == 1 else found * np.float32(count)
    threshold = kth_largest(scores, min(depth, len(hit)))
    chosen = np.flatnonzero(scores >= threshold)
    if not (np.isfinite(threshold) and threshold > 0 and np.isfinite(scores).all()):
        return None
    order = ranked(hit[chosen], scores[chosen], depth, searcher.source_uris)
    return hit[chosen][order], scores[chosen][order]


def _seed(terms: Terms, stats: TermStats, depth: int) -> tuple[Term | None, np.ndarray] | None:
    """The query's rarest term held by ``depth`` chunks or more in the collection (its rows
    bound the top: ``above_seed``), with its rows (collection ordinals); or None."""
    held = [
        (stats.df[t], t, term, rows) for t, rows, _, term, _ in terms if stats.df.get(t, 0) >= depth
    ]
    if not held:
        return None
    _, _, term, rows = min(held, key=lambda h: (h[0], h[1]))
    return term, rows


def pooled_walk(
    searcher: Searcher, q: np.ndarray, k: int, ef: int, each_ef: int, kept: Filter | None
) -> Ranking | None:
    """The pooled HNSW answer over global ordinals, or None."""
    shards, offsets = searcher.shards, searcher.offsets
    if len(shards) == 1 or searcher.remote:
        return None
    if any(getattr(s, "ann_candidates", None) is None for s in shards):
        return None
    found = searcher.each(
        lambda s: s.ann_candidates(q, k, each_ef, kept),  # type: ignore[attr-defined]
        pays=searcher.parallel or int(offsets[-1]) >= WALK_PARALLEL_MIN,
    )
    pools = [f for f in found if f is not None]
    if len(pools) < len(found):
        return None
    distances = np.concatenate([d for _, d in pools])
    starts = np.cumsum([0] + [len(c) for c, _ in pools])
    chosen = np.sort(np.argsort(distances, kind="stable")[: RERANK_FACTOR * max(ef, k)])
    ordinals, parts = [], []
    cuts = np.searchsorted(chosen, starts)  # chosen is sorted: each pool's share a slice
    for i, (candidates, _) in enumerate(pools):
        mine = chosen[cuts[i] : cuts[i + 1]] - starts[i]
        if len(mine):
            shard: Any = shards[i]  # a FileShard: ann_candidates was there
            rows, matrix = shard.rerank_rows(candidates[mine])
            ordinals.append(rows + offsets[i])
            parts.append((matrix, rows))
    if not ordinals:
        return None
    idx, exact = np.concatenate(ordinals), scores_of(parts, q)  # the shards' bits, one pass
    precision = parts[-1][0].dtype
    finite = np.isfinite(exact)  # a forged row never ranks (as top_k sets it aside)
    idx, exact = idx[finite], exact[finite]
    order = ranked(idx, exact, k, searcher.source_uris)
    return Ranking(idx[order], exact[order], "hnsw", precision=precision)


def shard_ef(ef: int, k: int, n_shards: int) -> int:
    """The ef each of ``n_shards`` HNSW graphs is walked with for a query's ``ef``:
    2 ef / sqrt(n), at least k and at most ef (so up to 4 shards walk at ef). Each graph
    holds 1/n of the chunks and need find only its share of the k best. Measured with
    16 shards at 1,000,000 chunks, ef 100 (benchmarks/bench_million.py): recall@10 0.884
    against the one file's 0.875 (ef / sqrt(n): 0.823), in 0.63x the time of 16 walks at
    ef 100."""
    return min(ef, max(k, math.ceil(2 * ef / math.sqrt(n_shards))))


def walked_top(searcher: Searcher, q: np.ndarray, depth: int, ef: int, kept: Filter | None) -> Pair:
    """The ``depth`` best by HNSW walks reranked exactly over every shard (``search-ann``'s
    path), as global ordinals: hybrid's vector side when a query asks for
    ``vector_index="ann"``."""
    each_ef = shard_ef(ef, depth, len(searcher.shards))
    pooled = pooled_walk(searcher, q, depth, ef, each_ef, kept)
    if pooled is not None:
        return pooled.ordinals, pooled.scores
    parts = searcher.each(lambda s: s.ann_top(q, depth, each_ef, kept))
    if len(parts) == 1:
        return parts[0].ordinals, parts[0].scores
    shifted = [(p.ordinals + searcher.offsets[s], p.scores) for s, p in enumerate(parts)]
    return merge_top(shifted, depth, searcher.source_uris)
