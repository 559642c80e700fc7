"""A collection's BM25 as one file holds it: each term's document frequency in the whole
collection, and its chunks over every shard as one array of collection ordinals with its
weights under the collection's statistics, each kept per term for the collection's life.

A text query then adds one array per term into the collection's scores, as one file adds
its own, where shard by shard it paid a look-up and a scatter per term and shard: 16
shards of 300,000 chunks, six-word queries, 0.22 against 0.77 ms a query for the scores
(the same bits: each chunk's weights are added in the same order). A new term's postings
are gathered from every shard as one array (``_Tables``), and a new term's frequency is
read from the local shards' vocabularies, not asked of each shard. A shard's deleted
chunks are left out.

Weighing a term's postings again under the collection's statistics is float64 work per
posting (its frequency recovered, then weighed), which one file never does. A long list
asked for the first time is not weighed: a weight under the collection's statistics is
its stored weight times the ratio of the two idfs times (tf + norm) / (tf + the
collection's norm), and with 0 <= b <= 1 that last factor lies between 1 and a, the
collection's average length over the shard's (``_Tables.upper`` and ``least``), so the
text pass (``search/pooled.py``) adds bounds and weighs only the chunks that can rank.
Asked again, the term is weighed in full and kept, so a repeated word costs what it did.
Six-word queries in one process, 16 shards, each query's pass timed, bounds against full
weighing interleaved, medians of 301 queries asked three times: a million chunks 2.87
against 3.40 ms the first time, 1.74 against 1.78 the second, 1.55 against 1.81 the
third; 300,000 chunks 2.11 against 1.94, 0.93 against 0.72 (a word's second query pays
its full weighing), 0.72 against 0.71.

Where the collection holds a text table (``search/text_table.py``: these weights, written
once after a full build or a compaction), a term's postings are read from it as one file
reads its own, and none of the weighing above runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from urna.index.bm25 import BM25Index, idf
from urna.index.bm25_global import TermStats, length_norm, tf_of, weigh
from urna.search.shard import Shard

POSTINGS_CACHE_BYTES = 128 << 20  # a common word's postings can be millions: bounded by bytes
TERMS_KEPT = 1 << 20  # terms whose collection frequency is kept
# A term held by fewer chunks is weighed in full at once. 16 shards of 300,000 chunks:
# 4,096 postings weighed in 160 µs against 41 µs for their bounds (16,384: 336 against
# 52; 512: 63 against 35); bounds cost a term its full weighing the next time it is asked,
# so they pay where the first query saves at least three times what they add later.
BOUND_MIN = 4096


class CollectionStats:
    """The collection's statistics for a query's terms, each term asked of the shards once
    (``ask``: the shards' statistics for new terms, combined), then kept: a query over 16
    shards no longer asks each shard for its frequencies."""

    def __init__(
        self,
        ask: Callable[[list[str], bool], TermStats],
        local: CollectionPostings | None = None,
    ) -> None:
        self._ask = ask
        self._local = local  # local shards' frequencies read from their tables, not asked
        self._df: dict[str, int | None] = {}  # None: no shard knows the term
        self._totals: tuple[int, float] | None = None  # documents, total length

    def of(self, tokens: Sequence[str], threads: bool = True) -> TermStats:
        known = {t: self._df.get(t, -1) for t in tokens}  # -1: not asked yet
        new = [t for t, df in known.items() if df == -1]
        totals = self._totals
        if new or totals is None:
            read = None if totals is None or self._local is None else self._local.df(new)
            if read is None:
                got = self._ask(new, threads)
                totals = self._totals = (got.n_docs, got.total_length)
                read = got.df
            if len(self._df) + len(new) > TERMS_KEPT:
                self._df.clear()
            for t in new:
                known[t] = self._df[t] = read.get(t)
        assert totals is not None
        return TermStats(*totals, {t: df for t, df in known.items() if df is not None})


class CollectionPostings:
    """Each term's (ordinals, weights) over local shards; the shards and their deletions
    are fixed for the life of the searcher that holds this (a new version opens anew).
    A server's threads share it: the caches and their byte counts change under a lock,
    while the weighing runs outside it."""

    def __init__(
        self, shards: Sequence[Shard], offsets: np.ndarray, table: BM25Index | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._shards = list(shards)
        self.table = table  # the weights stored under these shards' statistics, if written
        self._offsets = offsets
        self._tables: _Tables | None = None
        self._kept: dict[str, tuple[tuple[int, float, int | None], np.ndarray, np.ndarray]] = {}
        self._bytes = 0
        self._terms: dict[str, tuple[tuple[int, float, int | None], Term, np.ndarray, int]] = {}
        self._term_bytes = 0

    def close(self) -> None:
        """Let go of the text table and everything weighed: the table's map is unmapped as
        its last view goes (a collection's ``close``)."""
        with self._lock:
            self.table, self._tables = None, None
            self._kept, self._terms = {}, {}
            self._bytes = self._term_bytes = 0

    @property
    def tables(self) -> _Tables:
        with self._lock:
            if self._tables is None:
                self._tables = _Tables(self._shards, self._offsets)
            return self._tables

    def kept(self, token: str, stats: TermStats) -> tuple[np.ndarray, np.ndarray] | None:
        """``of(token, stats)`` when it is kept (weighed before under these statistics)."""
        kept = self._kept.get(token)
        key = (stats.n_docs, stats.total_length, stats.df.get(token))
        return (kept[1], kept[2]) if kept is not None and kept[0] == key else None

    def usable(self) -> bool:
        """Whether every shard can give its postings (a remote one cannot)."""
        return all(getattr(s, "text_tables", None) is not None for s in self._shards)

    def df(self, tokens: Sequence[str]) -> dict[str, int] | None:
        """Each token's count of live chunks holding it, over the shards that know it (what
        the shards' ``term_stats`` give, combined), read from the tables in one pass where
        asking 16 shards cost 0.13 ms a query; None where a shard is not local."""
        if not self.usable():
            return None
        if self.table is not None:
            ids, indptr = self.table.term_index, self.table.indptr
            held = ((t, ids.get(t)) for t in tokens)
            return {t: int(indptr[i + 1] - indptr[i]) for t, i in held if i is not None}
        tables, found = self.tables, {}
        for token in tokens:
            spans = tables.spans(token)
            if spans:
                found[token] = sum(tables.live(s, a, b) for s, a, b in spans)
        return found

    def bounded(
        self, token: str, stats: TermStats
    ) -> tuple[np.ndarray, np.ndarray, Term | None] | None:
        """``token``'s (rows, weights, stored postings) under ``stats``, or None when no
        live chunk holds it. The first time a long list (``BOUND_MIN``) is asked: the weights'
        upper bounds (``_Tables.upper``: the stored weights times a factor) and its stored
        postings. The next time, for a short list, or where no bound is proven: its exact
        weights, with None for the postings, kept from then on (within the cache's bytes):
        a repeated word costs what it did, and a word asked once is never weighed in full.
        """
        if not stats.df.get(token):  # no live chunk holds it (its postings all deleted)
            return None
        if self.table is not None:  # stored under these statistics: read as one file reads
            i = self.table.term_index.get(token)
            if i is None:  # not in a table that validate would refuse: adds nothing
                return None
            start, end = int(self.table.indptr[i]), int(self.table.indptr[i + 1])
            return self.table.doc_ids[start:end], self.table.weights[start:end], None
        key = (stats.n_docs, stats.total_length, stats.df.get(token))
        kept = self.kept(token, stats)
        if kept is not None:
            return kept[0], kept[1], None
        with self._lock:
            found = self._terms.pop(token, None)
            if found is not None:
                self._term_bytes -= found[3]
        if found is not None and found[0] == key:  # seen before: weighed in full now, kept
            rows, weights = self.tables.exact(found[1], stats)
            return *self._keep(token, stats, rows, weights), None
        term = self.tables.gather(token, stats)
        if term is None:
            return None
        upper = self.tables.upper(term, stats) if len(term.rows) >= BOUND_MIN else None
        if upper is None:  # a short list is weighed in full for about what bounds cost
            return *self._keep(token, stats, *self.tables.exact(term, stats)), None
        size = term.rows.nbytes + term.stored.nbytes + upper.nbytes
        with self._lock:
            if token not in self._terms and self._term_bytes + size <= POSTINGS_CACHE_BYTES:
                self._terms[token] = (key, term, upper, size)
                self._term_bytes += size
        return term.rows, upper, term

    def _keep(
        self, token: str, stats: TermStats, rows: np.ndarray, weights: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        key = (stats.n_docs, stats.total_length, stats.df.get(token))
        size = rows.nbytes + weights.nbytes
        with self._lock:
            if token in self._kept:
                self._kept[token] = (key, rows, weights)  # the same postings: the same size
            elif self._bytes + size <= POSTINGS_CACHE_BYTES:
                self._kept[token] = (key, rows, weights)
                self._bytes += size
        return rows, weights


class _Tables:
    """Every local shard's BM25 tables read as one: a term is looked up in each shard's
    vocabulary, and its postings over every shard are gathered, weighed and cut as one
    array, each chunk's length normalizations (under its shard's statistics, and under the
    collection's) computed once for the collection and read per posting, the float64 steps
    done in place. Gathered and weighed shard by shard, each term paid a Python object per
    shard and some twenty passes over its postings: 16 shards of 300,000 chunks, a query's
    weighing when all its words are new 1.00 against 1.64 ms (median of 900 queries)."""

    def __init__(self, shards: Sequence[Shard], offsets: np.ndarray) -> None:
        got = [s.text_tables() for s in shards]  # type: ignore[attr-defined]
        scorers = [g for g, _ in got]
        self.vocabularies = [g.index.term_index for g in scorers]
        self.indexes = [g.index for g in scorers]
        self.at = np.asarray(offsets[:-1], dtype=np.int64)
        self.params = [(g.k1, g.b, g.index.scale) for g in scorers]
        self.lengths = [g.lengths for g in scorers]
        self.avgdls = np.asarray([g.avgdl or 1.0 for g in scorers], dtype=np.float64)
        # A weight under the collection's statistics lies within a factor of its stored one
        # (``upper``, ``least``) when every shard's normalization grows with length, with
        # 0 <= b <= 1 (and k1 > 0).
        self.bounded = all(k1 > 0 and 0 <= b <= 1 for k1, b, _ in self.params)
        # scale * each chunk's normalization under its own shard's statistics (recovering tf)
        self.scaled = np.concatenate(
            [g.index.scale * length_norm(g.lengths, g.k1, g.b, g.avgdl or 1.0) for g in scorers]
        )
        self._norm: tuple[float, np.ndarray] | None = None  # under the collection's
        self.dead = None
        if any(d is not None for _, d in got):
            self.dead = np.concatenate(
                [np.zeros(g.index.n_docs, dtype=bool) if d is None else d for g, d in got]
            )

    def norm(self, avgdl: float) -> np.ndarray:
        """Each chunk's length normalization under the collection's average length."""
        if self._norm is None or self._norm[0] != avgdl:
            parts = [
                length_norm(dl, k1, b, avgdl)
                for dl, (k1, b, _) in zip(self.lengths, self.params, strict=True)
            ]
            self._norm = (avgdl, np.concatenate(parts))
        return self._norm[1]

    def spans(self, token: str) -> list[tuple[int, int, int]]:
        """(shard, start, end) of ``token``'s postings in each shard that knows it."""
        found = []
        for s, vocabulary in enumerate(self.vocabularies):
            i = vocabulary.get(token)
            if i is not None:
                start, end = self.indexes[s].indptr[i : i + 2].tolist()
                found.append((s, start, end))
        return found

    def live(self, shard: int, start: int, end: int) -> int:
        """How many of a shard's postings [start, end) are in live chunks."""
        if self.dead is None:
            return end - start
        docs = self.indexes[shard].doc_ids[start:end]
        return end - start - int(np.count_nonzero(self.dead[docs + self.at[shard]]))

    def gather(self, token: str, stats: TermStats) -> Term | None:
        """``token``'s postings over every shard, as stored (None: no shard knows it)."""
        found = self.spans(token)
        if not found:
            return None
        parts = [(self.indexes[s], s, a, b) for s, a, b in found]
        counts = [b - a for _, _, a, b in parts]
        rows = np.concatenate([x.doc_ids[a:b] for x, _, a, b in parts], dtype=np.int64)
        stored = np.concatenate([x.weights[a:b] for x, _, a, b in parts])
        shards = [s for s, _, _ in found]
        rows += np.repeat(self.at[shards], counts)
        keep = None if self.dead is None else ~self.dead[rows]
        live = len(rows) if keep is None else int(np.count_nonzero(keep))
        return Term(
            rows=rows,
            stored=stored,
            starts=np.cumsum([0, *counts]),
            shards=np.asarray(shards),
            local=np.asarray([idf(x.n_docs, b - a) for x, _, a, b in parts]),
            scales=[self.params[s][2] for s in shards],
            keep=keep,
            weight=idf(stats.n_docs, stats.df.get(token, live)),
        )

    def weighed(self, term: Term, stats: TermStats) -> np.ndarray:
        """The float32 weights under ``stats`` of all the term's postings: each stored weight
        over its shard's idf, the term frequency recovered, weighed again."""
        local = np.repeat(term.local, np.diff(term.starts))
        scales = term.scales
        same = all(v == scales[0] for v in scales)
        scale = scales[0] if same else np.repeat(scales, np.diff(term.starts))
        return self.weigh_rows(term.rows, term.stored, local, scale, term.weight, stats)

    def weigh_rows(
        self,
        rows: np.ndarray,
        stored: np.ndarray,
        local: Any,
        scale: Any,
        weight: Any,
        stats: TermStats,
    ) -> np.ndarray:
        """The float32 weights under ``stats`` of postings at collection ``rows`` (the one
        home of this arithmetic: a word's weighing, a query's bounded pass and the text
        table all call it): each ``stored`` weight over its shard's idf ``local``, the
        frequency recovered with its shard's ``scale``, weighed with the idf ``weight``
        (each a scalar or one per posting: the same operations element by element)."""
        ratio = stored.astype(np.float64)
        ratio /= local
        tf = tf_of(ratio, self.scaled[rows], scale)
        return weigh(weight, tf, self.norm(mean_length(stats))[rows])

    def weighed_at(
        self, picked: Sequence[tuple[Term, np.ndarray]], stats: TermStats
    ) -> list[np.ndarray]:
        """``weighed`` at some postings of several terms ((term, positions) pairs), in one
        pass: each posting's the same operations, so the same bits as weighing them all."""
        terms = [t for t, _ in picked]
        parts = [np.searchsorted(t.starts, p, side="right") - 1 for t, p in picked]
        rows = np.concatenate([t.rows[p] for t, p in picked])
        stored = np.concatenate([t.stored[p] for t, p in picked])
        local = np.concatenate([t.local[q] for t, q in zip(terms, parts, strict=True)])
        scales = [v for t in terms for v in t.scales]
        if all(v == scales[0] for v in scales):
            scale: Any = scales[0]
        else:
            pairs = zip(terms, parts, strict=True)
            scale = np.concatenate([np.asarray(t.scales, dtype=np.float64)[q] for t, q in pairs])
        counts = [len(p) for _, p in picked]
        weight = np.repeat(np.asarray([t.weight for t in terms], dtype=np.float64), counts)
        out = self.weigh_rows(rows, stored, local, scale, weight, stats)
        return np.split(out, np.cumsum(counts)[:-1])

    def exact(self, term: Term, stats: TermStats) -> tuple[np.ndarray, np.ndarray]:
        """The term's live postings and their weights under ``stats``."""
        weighed = self.weighed(term, stats)
        keep = term.keep
        return (term.rows, weighed) if keep is None else (term.rows[keep], weighed[keep])

    def upper(self, term: Term, stats: TermStats) -> np.ndarray | None:
        """Each posting's stored weight times its shard's factor (0 for a deleted chunk):
        at least its weight under ``stats`` and, by ``least``, at most 1 / least times it
        (float32 rounding aside); None where the bound is not proven (a parameter outside
        its range, or a stored weight at or past its shard's idf)."""
        if not self.bounded:
            return None
        tops = np.maximum.reduceat(term.stored, term.starts[:-1])
        if not (np.all(tops < term.local) and float(term.stored.min()) >= 0):
            return None
        a = mean_length(stats) / self.avgdls[term.shards]
        factor = (term.weight / term.local * np.maximum(a, 1.0)).astype(np.float32)
        upper = term.stored * np.repeat(factor, np.diff(term.starts))
        if term.keep is not None:
            upper[~term.keep] = 0
        return upper

    def least(self, stats: TermStats, shards: np.ndarray | None = None) -> float:
        """The smallest ratio of a weight under ``stats`` to its upper bound, over ``shards``
        (all when None): w = idf tf / (tf + norm), and a shard's norm over the collection's
        lies between 1 and a = the collection's average length over the shard's (0 <= b
        <= 1), so w / (stored w * idf ratio) lies between min(1, a) and max(1, a); the
        bound is max(1, a), the ratio at least min(a, 1 / a)."""
        a = mean_length(stats) / (self.avgdls if shards is None else self.avgdls[shards])
        return float(np.min(np.minimum(a, 1 / a)))


@dataclass(frozen=True)
class Term:
    """A term's postings over every shard, as stored: collection ordinals (ascending, deleted
    chunks included), the stored float32 weights, where each shard's part starts, and per
    part its shard, its shard's idf and frequency scale; ``keep`` marks the live postings,
    ``weight`` is the term's idf under the collection's statistics."""

    rows: np.ndarray
    stored: np.ndarray
    starts: np.ndarray
    shards: np.ndarray
    local: np.ndarray
    scales: list[float]
    keep: np.ndarray | None
    weight: float


def mean_length(stats: TermStats) -> float:
    return (stats.total_length / stats.n_docs if stats.n_docs else 1.0) or 1.0
