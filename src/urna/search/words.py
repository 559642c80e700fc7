"""Which chunks of one file hold a phrase or a word in their own text (the query language's
``"phrase"``, ``+word`` and ``-word``, ``search/syntax.py``).

A chunk holds a sequence of tokens when its stored text, read by the file's BM25 tokenizer
(case, stemming and stop words as BM25 reads them), has them one after the other. The
BM25 postings name the candidates (a chunk holding every token of the sequence, in its
text or, as BM25 in context weighs them, in a neighbour's), and each candidate's own text
is read again to decide, so the answer is what a scan of every stored text would give. A
file without a BM25 index is scanned whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from urna.format.chunks import ChunkStore
from urna.index.bm25 import BM25Index
from urna.index.tokenize import tokenize, tokenizer_for

Tokens = tuple[str, ...]


@dataclass(frozen=True)
class TextRule:
    """Token sequences a chunk must hold (each of them) and must not hold (any of them)."""

    required: tuple[Tokens, ...] = ()
    excluded: tuple[Tokens, ...] = ()


def holds(tokens: Sequence[str], seq: Tokens) -> bool:
    """Whether ``seq`` occurs in ``tokens`` with nothing between its tokens."""
    n = len(seq)
    if n == 0:
        return False
    first = seq[0]
    return any(
        tokens[i] == first and tuple(tokens[i : i + n]) == seq for i in range(len(tokens) - n + 1)
    )


class Words:
    """One file's chunks, read for the token sequences they hold."""

    def __init__(
        self,
        n: int,
        text_of: Callable[[int], str],
        tokenize: Callable[[str], list[str]],
        bm25: BM25Index | None,
    ) -> None:
        self.n, self._text_of, self._tokenize, self._bm25 = n, text_of, tokenize, bm25

    def mask(self, rule: TextRule, among: np.ndarray) -> np.ndarray:
        """Of the chunks ``among`` (what the other filters keep), those that hold every
        required sequence and no excluded one."""
        keep = np.zeros(self.n, dtype=bool)
        keep[among] = True
        for seq in rule.required:
            keep &= self.holding(seq, np.flatnonzero(keep))
        for seq in rule.excluded:
            keep &= ~self.holding(seq, np.flatnonzero(keep))
        return keep

    def holding(self, seq: Tokens, among: np.ndarray) -> np.ndarray:
        """A mask of the chunks of ``among`` that hold ``seq``."""
        out = np.zeros(self.n, dtype=bool)
        candidates = among
        if self._bm25 is not None:
            for token in dict.fromkeys(seq):
                rows = self._bm25.postings(token)[0].astype(np.int64)
                candidates = np.intersect1d(candidates, rows, assume_unique=True)
        for i in candidates.tolist():
            if holds(self._tokenize(self._text_of(i)), seq):
                out[i] = True
        return out


def document_tokenizer(name: str | None) -> Callable[[str], list[str]]:
    """How a file's BM25 index read its chunks (the current tokenizer for a file without
    one): a phrase is read the same way, so it matches what BM25 matched."""
    return (tokenizer_for(name) if name else None) or tokenize


def words_of(store: ChunkStore, bm25: BM25Index | None) -> Words:
    """The words of one file's chunks, read by its BM25 tokenizer."""
    read = document_tokenizer(bm25.tokenizer if bm25 is not None else None)
    return Words(store.n, lambda i: store.text_bytes(i).decode("utf-8"), read, bm25)
