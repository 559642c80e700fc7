"""Several files' BM25 tables read as one: each term's postings over every file gathered as
one array of collection ordinals, and weighed again under the collection's statistics.

The one home of that arithmetic (``Tables.weigh_rows``): a collection's query weighs a word
with it (``search/postings.py``), and a collection's text table is written with it
(``index/text_table.py``), so a stored weight has the bits a query's own weighing gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from urna.index.bm25 import idf
from urna.index.bm25_global import GlobalScorer, TermStats, length_norm, tf_of, weigh


class Tables:
    """Every local shard's BM25 tables read as one: a term is looked up in each shard's
    vocabulary, and its postings over every shard are gathered, weighed and cut as one
    array, each chunk's length normalizations (under its shard's statistics, and under the
    collection's) computed once for the collection and read per posting, the float64 steps
    done in place. Gathered and weighed shard by shard, each term paid a Python object per
    shard and some twenty passes over its postings: 16 shards of 300,000 chunks, a query's
    weighing when all its words are new 1.00 against 1.64 ms (median of 900 queries)."""

    def __init__(
        self, got: Sequence[tuple[GlobalScorer, np.ndarray | None]], offsets: np.ndarray
    ) -> None:
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
