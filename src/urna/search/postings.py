"""A collection's BM25 as one file holds it: each term's document frequency in the whole
collection, and its chunks over every shard as one array of collection ordinals with its
weights under the collection's statistics, each kept per term for the collection's life.

A text query then adds one array per term into the collection's scores, as one file adds
its own, where shard by shard it paid a look-up and a scatter per term and shard: 16
shards of 300,000 chunks, six-word queries, 0.22 against 0.77 ms a query for the scores
(the same bits: each chunk's weights are added in the same order). A new term's postings
are gathered from every shard as one array (``Tables``), and a new term's frequency is
read from the local shards' vocabularies, not asked of each shard. A shard's deleted
chunks are left out.

Weighing a term's postings again under the collection's statistics is float64 work per
posting (its frequency recovered, then weighed), which one file never does. A long list
asked for the first time is not weighed: a weight under the collection's statistics is
its stored weight times the ratio of the two idfs times (tf + norm) / (tf + the
collection's norm), and with 0 <= b <= 1 that last factor lies between 1 and a, the
collection's average length over the shard's (``Tables.upper`` and ``least``), so the
text pass (``search/pooled.py``) adds bounds and weighs only the chunks that can rank.
Asked again, the term is weighed in full and kept, so a repeated word costs what it did.
Six-word queries in one process, 16 shards, each query's pass timed, bounds against full
weighing interleaved, medians of 301 queries asked three times: a million chunks 2.87
against 3.40 ms the first time, 1.74 against 1.78 the second, 1.55 against 1.81 the
third; 300,000 chunks 2.11 against 1.94, 0.93 against 0.72 (a word's second query pays
its full weighing), 0.72 against 0.71.

Where the collection holds a text table (``index/text_table.py``: these weights, written
once after a full build or a compaction), a term's postings are read from it as one file
reads its own, and none of the weighing above runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from urna.index.bm25 import BM25Index
from urna.index.bm25_global import TermStats
from urna.index.bm25_tables import Tables, Term
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
        self._tables: Tables | None = None
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
    def tables(self) -> Tables:
        with self._lock:
            if self._tables is None:
                got = [s.text_tables() for s in self._shards]  # type: ignore[attr-defined]
                self._tables = Tables(got, self._offsets)
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
        upper bounds (``Tables.upper``: the stored weights times a factor) and its stored
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
