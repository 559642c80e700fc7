"""Typo tolerance for the text method: a query word the corpus does not hold is read as the
vocabulary word closest to it, as Meilisearch reads one by default.

A word of 5 to 8 characters may be one edit away, a word of 9 or more two (an edit: a
letter added, dropped, changed, or two neighbours swapped: the optimal string alignment
distance, rapidfuzz's ``OSA``). The distance is taken from the word as typed and from its
stem to the stems BM25 holds, and the closest wins, then the one more chunks hold, then the
first in sort order. Never for a word with digits (an identifier: ``cd4``, ``LM358B``), a
word shorter than 5, a word of a phrase (``"..."``, ``+``, ``-``: those are exact), or a
word the corpus holds at all. ``typos=False`` (``--no-typos``) turns it off.

In hybrid mode the vector side reads the corrected query too: each typo is respelt as a
word of the corpus that reads as the stem it was read as (the first such word in the chunk
of smallest id holding it, found once and kept: the same in a file and a collection), and
the model embeds both the query as typed and as respelt, the vector side searching by
their mean: a real word wrongly read as a typo (``myelopathy`` as ``myopathy``) still
counts half. Embedding the respelt query alone kept a little more of the typo'd queries'
nDCG@10 on two sets of three but lowered clean nfcorpus five times as much
(``benchmarks/typo_robustness.py``; the figures are in the docs). Vector mode asks for the
model alone and embeds the query as typed.

What it does not do: a word the corpus holds rarely beside a far more frequent neighbour is
left as it is (the vocabulary cannot tell a rare word from a typo, and BM25 weighs a
query's terms equally, so an added neighbour would count as much as the word typed). A
corpus served by Ray shards has no vocabulary here and is searched as typed.

rapidfuzz's ``process.extract`` scans the stems of the lengths a match can have, in C; a word
is looked up only when the vocabulary does not hold it, so a query without typos costs one
dictionary look-up a word (``benchmarks/bench_syntax.py`` gives the costs).
"""

from __future__ import annotations

import heapq
import re
import threading
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from urna.index.bm25 import BM25Index

ONE_EDIT, TWO_EDITS = 5, 9  # word lengths from which 1 and 2 edits are tolerated
LOOKED = 8  # chunks read for a word that respells a stem
WORD = re.compile(r"\w+", re.UNICODE)


def edits_for(word: str) -> int:
    if len(word) >= TWO_EDITS:
        return 2
    return 1 if len(word) >= ONE_EDIT else 0


class Vocabulary:
    """The stems BM25 holds in these indexes, and how many chunks hold each (summed over a
    collection's shards): the sorted list is made on the first look-up that needs it."""

    def __init__(
        self,
        indexes: Sequence[BM25Index],
        texts: Sequence[Callable[[int], str]] = (),
        ids: Sequence[Callable[[int], str]] = (),
    ) -> None:
        self._indexes = indexes
        self._texts = texts  # each index's chunk texts by ordinal, to respell a stem
        self._ids = ids  # and its chunk ids, which choose the chunk a stem is respelt from
        self._lock = threading.Lock()
        self._sorted: tuple[dict[int, list[str]], dict[str, int]] | None = None
        self._words: dict[str, str | None] = {}

    @classmethod
    def of(cls, shards: Iterable[object]) -> Vocabulary | None:
        """The vocabulary of these shards (None where one has no BM25 index here: a Ray
        shard, a file without one)."""
        shards = list(shards)
        indexes = [getattr(shard, "bm25", None) for shard in shards]
        if any(index is None for index in indexes):
            return None
        texts = [lambda i, s=shard: s.chunk(i).text for shard in shards]
        ids = [lambda i, s=shard: s.chunk_id(i) for shard in shards]
        return cls([index for index in indexes if index is not None], texts, ids)

    def holds(self, token: str) -> bool:
        return any(token in index.term_index for index in self._indexes)

    def _terms(self) -> tuple[dict[int, list[str]], dict[str, int]]:
        """The stems by length (a word n edits away is at most n letters longer or shorter,
        so a look-up reads only those lengths), and each stem's chunk count."""
        with self._lock:
            if self._sorted is None:
                df: dict[str, int] = {}
                for index in self._indexes:
                    counts = np.diff(np.asarray(index.indptr, dtype=np.int64)).tolist()
                    for term, i in index.term_index.items():
                        df[term] = df.get(term, 0) + int(counts[i])
                by_length: dict[int, list[str]] = {}
                for term in sorted(df):
                    by_length.setdefault(len(term), []).append(term)
                self._sorted = (by_length, df)
            return self._sorted

    def nearest(self, word: str, stem: str) -> str | None:
        """The vocabulary stem closest to ``word`` as typed or to its ``stem``, within the
        edits its length allows; None when none is."""
        from rapidfuzz import process
        from rapidfuzz.distance import OSA

        edits = edits_for(word)
        if not edits:
            return None
        by_length, df = self._terms()
        found: dict[str, int] = {}
        for probe in dict.fromkeys((stem, word)):
            for n in range(len(probe) - edits, len(probe) + edits + 1):
                for term, distance, _ in process.extract(
                    probe, by_length.get(n, ()), scorer=OSA.distance, score_cutoff=edits, limit=32
                ):
                    found[term] = min(distance, found.get(term, edits + 1))
        if not found:
            return None
        return min(found, key=lambda t: (found[t], -df[t], t))

    def word_for(self, stem: str, tokenize: Callable[[str], list[str]]) -> str | None:
        """A word of the corpus that reads as ``stem``: the first in the chunk of smallest
        chunk id holding it in its own text (a chunk may hold a stem only through its
        neighbours' context). Chunk ids are the chunks' own, so a file and a collection of
        the same chunks respell alike, however they are cut. None when none of the first
        ``LOOKED`` such chunks holds it, or no chunk text is at hand."""
        if stem not in self._words:
            held = []
            for s, index in enumerate(self._indexes[: len(self._texts)]):
                held += [(self._ids[s](int(i)), s, int(i)) for i in index.postings(stem)[0]]
            found = None
            for _, s, i in heapq.nsmallest(LOOKED, held):
                words = WORD.finditer(self._texts[s](i))
                found = next((w.group(0) for w in words if tokenize(w.group(0)) == [stem]), None)
                if found is not None:
                    break
            self._words[stem] = found
        return self._words[stem]


def respelt(
    text: str,
    fixes: dict[str, str],
    vocabulary: Vocabulary,
    tokenize: Callable[[str], list[str]],
) -> str:
    """``text`` with each word read as a typo (its token a key of ``fixes``) written as a
    word of the corpus that reads as its correction; the rest as typed."""
    if not fixes:
        return text

    def respell(match: re.Match[str]) -> str:
        tokens = tokenize(match.group(0).lower())
        if len(tokens) == 1 and tokens[0] in fixes:
            return vocabulary.word_for(fixes[tokens[0]], tokenize) or match.group(0)
        return match.group(0)

    return WORD.sub(respell, text)


def corrected(
    text: str,
    terms: Sequence[str],
    vocabulary: Vocabulary,
    tokenize: Callable[[str], list[str]],
    exact: set[str],
) -> tuple[list[str], dict[str, str]]:
    """``terms`` (the query's BM25 tokens) with each typo read as its nearest vocabulary stem,
    and what was read so (token -> stem). ``exact``: tokens of phrases, never changed."""
    fixes: dict[str, str] = {}
    for match in WORD.finditer(text):
        word = match.group(0).lower()
        if any(c.isdigit() for c in word) or edits_for(word) == 0:
            continue
        tokens = tokenize(word)
        if len(tokens) != 1:
            continue
        token = tokens[0]
        if token in exact or token in fixes or vocabulary.holds(token):
            continue
        found = vocabulary.nearest(word, token)
        if found is not None:
            fixes[token] = found
    return [fixes.get(t, t) for t in terms], fixes
