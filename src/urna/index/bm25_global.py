"""BM25 with another document set's statistics: a collection's shards scored as one file.

``TermStats`` are what BM25 needs of the whole set (documents, total length, each query
term's document frequency); ``GlobalScorer`` rescores one index's postings with them
(``recover_tf``, then ``weigh``), as a collection's postings do (``search/postings.py``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
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


def length_norm(dl: np.ndarray, k1: Any, b: Any, avgdl: Any) -> np.ndarray:
    """Each document's k1 (1 - b + b dl / avgdl), in float64 as the build computes it (the
    parameters scalars or one per document: the same operations element by element)."""
    return k1 * (1 - b + b * dl / avgdl)


def tf_of(ratio: np.ndarray, scaled_norm: np.ndarray, scale: Any) -> np.ndarray:
    """Term frequencies from ``ratio``, each stored weight over its idf (float64, which
    this overwrites): tf = norm * w / (idf - w), rounded to the stored units (exact for a
    chunk's counts); ``scaled_norm`` is scale * each weight's ``length_norm`` under its
    own index's statistics. In place, the same operations as norm r / (1 - r)."""
    tail = 1 - ratio
    ratio *= scaled_norm
    ratio /= tail
    np.rint(ratio, out=ratio)
    ratio /= scale
    return ratio


def recover_tf(
    weights: np.ndarray, idf_local: Any, dl: np.ndarray, k1: Any, b: Any, avgdl: Any, scale: Any
) -> np.ndarray:
    """``tf_of`` stored weights, from each posting's document length and its index's
    parameters (scalars, or one per posting: the same operations element by element)."""
    ratio = weights.astype(np.float64) / idf_local
    return tf_of(ratio, scale * length_norm(dl, k1, b, avgdl), scale)


def weigh(weight: Any, tf: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """BM25's float32 weights, idf * tf / (tf + norm), computed in float64 as the build
    computes them (``norm``: each posting's ``length_norm`` under the statistics used;
    ``weight``: the idf, or one per posting: the same operations element by element)."""
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
        self._keeping = threading.Lock()  # a server's threads share the kept weights

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
                index.weights[start:end],
                idf(n, end - start),
                dl,
                self.k1,
                self.b,
                self.avgdl or 1.0,
                index.scale,
            )
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

    def _weighed(self, i: int, key: tuple[int, int, float]) -> np.ndarray:
        """Term i's posting weights with a collection's (documents, df, average length)."""
        kept = self._weights.get(i)
        if kept is not None and kept[0] == key:
            return kept[1]
        n_docs, df, avgdl_g = key
        norm = self._norm
        if norm is None or norm[0] != avgdl_g:  # every document's normalization, once
            lengths = length_norm(self.lengths, self.k1, self.b, avgdl_g or 1.0)
            norm = self._norm = (avgdl_g, lengths)
        start, end = int(self.index.indptr[i]), int(self.index.indptr[i + 1])
        tf = self._tf(i)
        weight = idf(n_docs, df)
        weights = weigh(weight, tf, norm[1][self.index.doc_ids[start:end]])
        with self._keeping:
            if i in self._weights:
                self._weights[i] = (key, weights)  # the same postings: the same size
            elif self._weight_bytes + weights.nbytes <= WEIGHT_CACHE_BYTES:
                self._weights[i] = (key, weights)
                self._weight_bytes += weights.nbytes
        return weights
