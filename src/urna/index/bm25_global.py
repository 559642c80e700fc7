"""BM25 with another document set's statistics: a collection's shards scored as one file.

``TermStats`` are what BM25 needs of the whole set (documents, total length, each query
term's document frequency); ``GlobalScorer`` rescores one index's postings with them, and
``reweigh`` several indexes' postings of one term at once (``Stored``: each index's
postings as stored, with its parameters).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from urna.index.bm25 import BM25Index, idf

TF_CACHE_TERMS = 200_000  # recovered tf arrays a GlobalScorer keeps
WEIGHT_CACHE_BYTES = 64 << 20  # weight arrays under a collection's statistics it keeps


@dataclass(frozen=True)
class TermStats:
    """What BM25 needs to score with statistics of a whole collection: the number of
    documents, their total length, and each query term's document frequency."""

    n_docs: int
    total_length: float  # in words (a chunk in context counts its neighbours' at 1/m)
    df: dict[str, int]

    def idf_sum(self, tokens: Sequence[str]) -> float:
        """Sum of idf over the query terms these statistics know, with the query's repeats
        (what ``BM25Index.idf_sum`` gives for one file holding every document)."""
        return sum(
            count * idf(self.n_docs, self.df[token])
            for token, count in Counter(tokens).items()
            if self.df.get(token)
        )

    @staticmethod
    def combine(parts: Sequence[TermStats]) -> TermStats:
        df: dict[str, int] = {}
        for part in parts:
            for term, count in part.df.items():
                df[term] = df.get(term, 0) + count
        return TermStats(sum(p.n_docs for p in parts), sum(p.total_length for p in parts), df)


@dataclass(frozen=True)
class Stored:
    """One index's postings of a term as stored, with what weighing them again needs."""

    docs: np.ndarray  # the documents holding the term, ascending
    weights: np.ndarray  # their stored float32 weights
    lengths: np.ndarray  # their lengths in words, float64
    idf: float  # the term's idf in this index (all its postings counted)
    avgdl: float  # this index's average length (1.0 for none)
    k1: float
    b: float
    scale: float  # frequencies are multiples of 1/scale

    def only(self, keep: np.ndarray) -> Stored:
        """These postings restricted by a mask (a shard's deleted chunks left out)."""
        docs, weights, lengths = self.docs[keep], self.weights[keep], self.lengths[keep]
        return replace(self, docs=docs, weights=weights, lengths=lengths)


def recover_tf(
    weights: np.ndarray, idf_local: Any, dl: np.ndarray, k1: Any, b: Any, avgdl: Any, scale: Any
) -> np.ndarray:
    """Term frequencies from stored weights: tf = norm * w / (idf - w), rounded to the
    stored units (exact for a chunk's counts). The parameters are scalars or one per
    posting: the same float64 operations, element by element, either way."""
    norm = k1 * (1 - b + b * dl / avgdl)
    ratio = weights.astype(np.float64) / idf_local
    return np.rint(scale * norm * ratio / (1 - ratio)) / scale


def reweigh(parts: Sequence[Stored], stats: TermStats, token: str) -> np.ndarray:
    """The float32 weights of several indexes' postings of ``token`` (concatenated) under
    ``stats``, in one pass: each index's parameters repeated per posting, so the bits are
    those each index's ``GlobalScorer`` gives, without a pass per index."""
    counts = [len(p.docs) for p in parts]
    if not parts:
        return np.empty(0, dtype=np.float32)

    def each(values: list[float]) -> Any:  # one value for all: the same bits as repeated
        same = all(v == values[0] for v in values)
        return values[0] if same else np.repeat(np.asarray(values, dtype=np.float64), counts)

    k1, b = each([p.k1 for p in parts]), each([p.b for p in parts])
    dl = np.concatenate([p.lengths for p in parts])
    tf = recover_tf(
        np.concatenate([p.weights for p in parts]),
        each([p.idf for p in parts]),
        dl,
        k1,
        b,
        each([p.avgdl for p in parts]),
        each([p.scale for p in parts]),
    )
    avgdl_g = (stats.total_length / stats.n_docs if stats.n_docs else 1.0) or 1.0
    weight = idf(stats.n_docs, stats.df.get(token, sum(counts)))
    norm = k1 * (1 - b + b * dl / avgdl_g)
    return (weight * tf / (tf + norm)).astype(np.float32)


def _exact_param(stored: float) -> float:
    """The build's own float64 parameter: the shortest decimal that rounds to the stored
    float32 (1.2 for the float32 nearest 1.2), as the build wrote it."""
    return float(str(np.float32(stored)))


class GlobalScorer:
    """BM25 over one index with another document set's statistics (a collection's).

    The stored weights used this index's own idf and average length; each posting's term
    frequency is recovered from its weight (tf = norm * w / (idf - w), rounded: exact for
    the term counts of a chunk), then weighed again with the global idf and average length,
    in float64 and rounded to float32 as the build does. So a collection's shards score
    exactly as one file holding all their chunks would.
    """

    def __init__(self, index: BM25Index) -> None:
        self.index = index
        self.k1 = _exact_param(index.k1)
        self.b = _exact_param(index.b)
        self.lengths = index.doc_len.astype(np.float64) / index.scale
        self.total_length = int(index.doc_len.sum(dtype=np.int64)) / index.scale
        self.avgdl = self.total_length / index.n_docs if index.n_docs else 0.0
        self._tfs: dict[int, np.ndarray] = {}
        # A collection's statistics change only with its version: the length normalization
        # and each term's weights under them are kept, so a query pays per shard what one
        # file pays (a lookup and an add per posting), not the float64 weighing again.
        self._norm: tuple[float, np.ndarray] | None = None
        self._weights: dict[int, tuple[tuple[int, int, float], np.ndarray]] = {}
        self._weight_bytes = 0  # bounded by bytes: a common term's postings can be millions

    def stats(
        self,
        tokens: Sequence[str],
        dead: np.ndarray | None = None,
        live: tuple[int, float] | None = None,
    ) -> TermStats:
        """This index's statistics; with ``dead`` (a mask of deleted documents) those of
        the live documents only: their frequencies, and their count and total length
        (``live``, when the caller keeps them)."""
        index, ids = self.index, self.index.term_index
        df = {}
        for token in dict.fromkeys(tokens):
            i = ids.get(token)
            if i is not None:
                start, end = int(index.indptr[i]), int(index.indptr[i + 1])
                gone = 0 if dead is None else int(np.count_nonzero(dead[index.doc_ids[start:end]]))
                df[token] = end - start - gone
        if dead is None:
            return TermStats(index.n_docs, self.total_length, df)
        if live is None:
            live = (index.n_docs - int(np.count_nonzero(dead)), self.live_length(dead))
        return TermStats(live[0], live[1], df)

    def live_length(self, dead: np.ndarray) -> float:
        return int(self.index.doc_len[~dead].sum(dtype=np.int64)) / self.index.scale

    def _tf(self, i: int) -> np.ndarray:
        """Term i's recovered term frequencies, one per posting (computed once, then kept)."""
        found = self._tfs.get(i)
        if found is None:
            index, n = self.index, self.index.n_docs
            start, end = int(index.indptr[i]), int(index.indptr[i + 1])
            dl = self.lengths[index.doc_ids[start:end]]
            found = recover_tf(
                index.weights[start:end], idf(n, end - start), dl, self.k1, self.b,
                self.avgdl or 1.0, index.scale,
            )  # fmt: skip
            if len(self._tfs) < TF_CACHE_TERMS:
                self._tfs[i] = found
        return found

    def scores(
        self, tokens: Sequence[str], stats: TermStats, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Every document's score under ``stats``, added into ``out`` (zeros of n_docs
        float32, by default new ones)."""
        if out is None:
            out = np.zeros(self.index.n_docs, dtype=np.float32)
        for token, count in Counter(tokens).items():
            docs, weights = self.postings(token, stats)
            out[docs] += weights if count == 1 else weights * np.float32(count)
        return out

    def postings(self, token: str, stats: TermStats) -> tuple[np.ndarray, np.ndarray]:
        """The documents holding ``token`` and its weight in each under ``stats`` (none
        when this index does not know it)."""
        index = self.index
        i = index.term_index.get(token)
        if i is None:
            return np.empty(0, dtype=np.uint32), np.empty(0, dtype=np.float32)
        start, end = int(index.indptr[i]), int(index.indptr[i + 1])
        avgdl_g = stats.total_length / stats.n_docs if stats.n_docs else 1.0
        df = stats.df.get(token, end - start)
        return index.doc_ids[start:end], self._weighed(i, (stats.n_docs, df, avgdl_g))

    def stored(self, token: str) -> Stored | None:
        """This index's postings of ``token`` as stored (``reweigh`` weighs them again)."""
        index = self.index
        i = index.term_index.get(token)
        if i is None:
            return None
        start, end = int(index.indptr[i]), int(index.indptr[i + 1])
        docs = index.doc_ids[start:end]
        return Stored(
            docs, index.weights[start:end], self.lengths[docs], idf(index.n_docs, end - start),
            self.avgdl or 1.0, self.k1, self.b, index.scale,
        )  # fmt: skip

    def _weighed(self, i: int, key: tuple[int, int, float]) -> np.ndarray:
        """Term i's posting weights with a collection's (documents, df, average length)."""
        kept = self._weights.get(i)
        if kept is not None and kept[0] == key:
            return kept[1]
        n_docs, df, avgdl_g = key
        norm = self._norm
        if norm is None or norm[0] != avgdl_g:  # every document's normalization, once
            lengths = self.k1 * (1 - self.b + self.b * self.lengths / (avgdl_g or 1.0))
            norm = self._norm = (avgdl_g, lengths)
        start, end = int(self.index.indptr[i]), int(self.index.indptr[i + 1])
        tf = self._tf(i)
        weight = idf(n_docs, df)
        weights = (weight * tf / (tf + norm[1][self.index.doc_ids[start:end]])).astype(np.float32)
        if kept is not None:
            self._weights[i] = (key, weights)  # the same postings: the same size
        elif self._weight_bytes + weights.nbytes <= WEIGHT_CACHE_BYTES:
            self._weights[i] = (key, weights)
            self._weight_bytes += weights.nbytes
        return weights
