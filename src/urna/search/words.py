"""Which chunks of one file hold a phrase or a word in their own text (the query language's
``"phrase"``, ``+word`` and ``-word``, ``search/syntax.py``).

A chunk holds a sequence of tokens when its stored text, read by the file's BM25 tokenizer
(case, stemming and stop words as BM25 reads them), has them one after the other. The
BM25 postings name the candidates (a chunk holding every token of the sequence, in its
text or, as BM25 in context weighs them, in a neighbour's), and each candidate's own text
is read again to decide, so the answer is what a scan of every stored text would give. A
file without a BM25 index is scanned whole. Under version 5 (``index/mixed.py``) each chunk
is read in its own language, and a phrase is read in each language the corpus holds: a
chunk holds it when it holds the phrase as read in the chunk's language.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from urna.format.chunks import ChunkStore
from urna.index.bm25 import BM25Index
from urna.index.mixed import FIELD, analysis_of
from urna.index.tokenize import PER_DOCUMENT, Tokenizer, read_in, tokenize, tokenizer_for
from urna.search.metadata import FieldColumns

Tokens = tuple[str, ...]


@dataclass(frozen=True)
class TextRule:
    """Token sequences a chunk must hold (each of them) and must not hold (any of them)."""

    required: tuple[Tokens, ...] = ()
    excluded: tuple[Tokens, ...] = ()
    # version 5: the rule as read in each language the corpus holds (then the two above
    # are empty), applied to the chunks read in that language
    readings: tuple[tuple[str, TextRule], ...] = ()

    def tokens(self) -> set[str]:
        """Every token the rule names, in any reading."""
        out = {t for seq in self.required + self.excluded for t in seq}
        for _, rule in self.readings:
            out |= rule.tokens()
        return out


def holds(tokens: Sequence[str], seq: Tokens) -> bool:
    """Whether ``seq`` occurs in ``tokens`` with nothing between its tokens."""
    n = len(seq)
    if n == 0:
        return False
    first = seq[0]
    return any(
        tokens[i] == first and tuple(tokens[i : i + n]) == seq for i in range(len(tokens) - n + 1)
    )


class Readers:
    """How one file reads each chunk's words: as its BM25 tokenizer names (the current
    tokenizer for a file without one), or under version 5 in the chunk's own language."""

    def __init__(self, name: str | None, columns: FieldColumns) -> None:
        self.per_document = name == PER_DOCUMENT
        self._one = document_tokenizer(name)
        self._columns = columns
        self._codes: np.ndarray | None = None  # each chunk's language, once asked

    def language(self, i: int) -> str:
        """The language chunk ``i`` is read in ("" where the file reads one way)."""
        if not self.per_document:
            return ""
        return analysis_of(self._columns.record(i).get(FIELD))

    def languages(self) -> np.ndarray:
        """Each chunk's language ("" where the file reads one way), worked out once."""
        if self._codes is None:
            if not self.per_document:
                self._codes = np.full(self._columns.n, "", dtype=object)
            else:
                values, of_chunk = self._columns.column(FIELD)
                codes = np.array([analysis_of(v) for v in values] + ["en"], dtype=object)
                self._codes = codes[of_chunk]
        return self._codes

    def __call__(self, i: int) -> Tokenizer:
        return read_in(self.language(i)) if self.per_document else self._one


class Words:
    """One file's chunks, read for the token sequences they hold."""

    def __init__(
        self, n: int, text_of: Callable[[int], str], read: Readers, bm25: BM25Index | None
    ) -> None:
        self.n, self._text_of, self._read, self._bm25 = n, text_of, read, bm25

    def mask(self, rule: TextRule, among: np.ndarray) -> np.ndarray:
        """Of the chunks ``among`` (what the other filters keep), those that hold every
        required sequence and no excluded one."""
        if rule.readings:
            keep = np.zeros(self.n, dtype=bool)
            codes = self._read.languages()[among]
            for lang, one in rule.readings:
                keep |= self.mask(one, among[codes == lang])
            return keep
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
            if holds(self._read(i)(self._text_of(i)), seq):
                out[i] = True
        return out


def document_tokenizer(name: str | None) -> Callable[[str], list[str]]:
    """How a file's BM25 index read its chunks (the current tokenizer for a file without
    one): a phrase is read the same way, so it matches what BM25 matched."""
    return (tokenizer_for(name) if name else None) or tokenize


def words_of(store: ChunkStore, read: Readers, bm25: BM25Index | None) -> Words:
    """The words of one file's chunks, read as its BM25 index reads them."""
    return Words(store.n, lambda i: store.text_bytes(i).decode("utf-8"), read, bm25)
