"""Version 5 of the BM25 tokenizer: each chunk read in its own document's language.

A build with ``--lang auto`` (the spec's ``[index] lang = "auto"``) records each document's
language in its ``lang`` field: the one the document declares (front matter ``lang: de``, a
JSONL record's ``lang``, a ``[[metadata.set]]`` rule), else the one py3langid detects in
its text (``build/language.py``). BM25 reads each chunk by that field, with version 4's
rules in that language (version 3's for English, Chinese, Japanese and Korean). A value
that names no language BM25 can read (``pl``, ``klingon``) is read as English, at build and
at query time alike, so the stored field decides and nothing is guessed twice.

A query is read in one language when its stop words say which: the corpus language whose
stop list holds more of the query's words than any other's ("wie funktioniert die
Photosynthese" is German: ``wie``, ``die``). Where none or several tie (a query of
keywords, "Photosynthese"), it is read in every language the corpus holds and the terms
are pooled, so a word finds its stem in whichever language a chunk was read. Counting stop
words is integer arithmetic over fixed lists: the same query gets the same reading on
every machine, where a statistical detector's close calls could differ with the CPU's
floating point.

Written by hand: the rule is a few lines over ``index/tokenize.py``'s readers.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from urna.index.languages import LANGUAGES, code_of, stop_words
from urna.index.tokenize import QUERY_STOPWORDS, Tokenizer, query_in, read_in

FIELD = "lang"  # the chunk field that names its language
_WORDS = re.compile(r"[^\W\d_]+")


def analysis_of(value: object) -> str:
    """The language a stored ``lang`` value is read in: its code when BM25 knows it (``de``,
    ``de-DE``, ``DE_de``), else English."""
    if not isinstance(value, str):
        return "en"
    return code_of(value.replace("_", "-").split("-", 1)[0]) or "en"


def _stops(lang: str) -> frozenset[str]:
    if lang == "en":
        return QUERY_STOPWORDS
    return stop_words(lang) if lang in LANGUAGES else frozenset()


def query_language(text: str, languages: Sequence[str]) -> str | None:
    """The one of ``languages`` whose stop words the query holds most of, or None where
    none holds any or two tie."""
    words = [m.group(0) for m in _WORDS.finditer(text.lower())]
    counts = sorted(
        ((sum(w in _stops(lang) for w in words), lang) for lang in languages), reverse=True
    )
    if not counts or counts[0][0] == 0 or (len(counts) > 1 and counts[1][0] == counts[0][0]):
        return None
    return counts[0][1]


@dataclass(frozen=True)
class MixedQuery:
    """How a query to a corpus of these languages (sorted codes) is read."""

    languages: tuple[str, ...]

    def reading(self, text: str) -> tuple[str, ...]:
        """The languages ``text`` is read in: the one its stop words show, else all."""
        one = query_language(text, self.languages)
        return (one,) if one is not None else self.languages

    def note(self, text: str) -> str:
        """What the answer says of the reading: ``words read as de`` or ``in de, en``."""
        langs = self.reading(text)
        if len(self.languages) == 1:
            return ""
        if len(langs) == 1:
            return f"words read as {langs[0]}"
        return f"words read in {', '.join(langs)}"

    def __call__(self, text: str) -> list[str]:
        return pooled(query_in(lang)(text) for lang in self.reading(text))


def pooled(readings: Iterable[list[str]]) -> list[str]:
    """The terms of several readings of one text: each term as often as the reading that
    holds it most (its copies side by side, where it first appears)."""
    out: list[str] = []
    held: Counter[str] = Counter()
    for terms in readings:
        for term, n in Counter(terms).items():
            out.extend([term] * (n - held[term]))
            held[term] = max(held[term], n)
    return out


def reader_of(value: object) -> Tokenizer:
    """How a chunk whose ``lang`` field holds ``value`` is read."""
    return read_in(analysis_of(value))


def languages_of(values: Iterable[object]) -> tuple[str, ...]:
    """The languages chunks with these ``lang`` values are read in, sorted."""
    return tuple(sorted({analysis_of(v) for v in values}))
