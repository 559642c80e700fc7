"""Complete scores for fusion: each method's own score of the candidates the other method
returned (``search/fusion.py``), over one file or every shard of a collection (one call per
shard holding any, remote shards asked at once).

A candidate's cosine is its stored row's (``rowscore.row_scores``), its BM25 the sum of
its terms' weights under the searcher's statistics (``index/bm25.py`` ``scores_at``): the
bits the method's own top would give it, whichever path (one file, the collection's text
table, the shards' postings weighed again, a remote shard) answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from urna.index.bm25 import BM25Index, scores_at
from urna.search.postings import CollectionPostings, CollectionStats
from urna.search.shard import Pair, Shard
from urna.search.text import Fill


class Searched(Protocol):
    """What a filler reads of the search core (``search/core.py``'s ``Searcher``)."""

    shards: list[Shard]
    offsets: np.ndarray
    remote: bool
    stats: CollectionStats
    postings: CollectionPostings

    def owners(self, ordinals: np.ndarray) -> list[tuple[int, np.ndarray]]: ...

    def fan(self, items: Sequence[int], call: Callable[[int], Pair]) -> list[Pair]: ...


def filler(searcher: Searched, tokens: Sequence[str]) -> Fill:
    """``rank``'s ``fill`` for a text query's tokens: (query vector, ordinals to score by
    cosine, ordinals to score by BM25), each ascending -> (cosines, BM25 scores)."""

    def fill(
        q: np.ndarray, by_vector: np.ndarray, by_text: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        shards, offsets = searcher.shards, searcher.offsets
        if len(shards) == 1:
            return shards[0].scores_at(q, tokens, None, (by_vector, by_text))
        stats = searcher.stats.of(tokens, searcher.remote)
        table: BM25Index | None = None if searcher.remote else searcher.postings.table
        cosines = np.zeros(len(by_vector), dtype=np.float32)
        bm25 = np.zeros(len(by_text), dtype=np.float32)
        if table is not None:  # the collection's weights, stored: read as one file reads
            bm25 = scores_at(tokens, by_text, table.postings)
            by_text = by_text[:0]
        vector_at, text_at = dict(searcher.owners(by_vector)), dict(searcher.owners(by_text))
        nothing = np.empty(0, dtype=np.int64)
        asked = sorted(vector_at.keys() | text_at.keys())

        def ask(s: int) -> Pair:
            v, t = vector_at.get(s, nothing), text_at.get(s, nothing)
            rows = (by_vector[v] - offsets[s], by_text[t] - offsets[s])
            return shards[s].scores_at(q, tokens, stats, rows)

        for s, (found_cosines, found_bm25) in zip(asked, searcher.fan(asked, ask), strict=True):
            cosines[vector_at.get(s, nothing)] = found_cosines
            if s in text_at:
                bm25[text_at[s]] = found_bm25
        return cosines, bm25

    return fill
