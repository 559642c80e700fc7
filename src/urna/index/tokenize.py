"""The BM25 tokenizer: Unicode words, identifiers kept whole, CJK bigrams, stop words, Snowball.

* Words are runs of Unicode letters and digits. Words joined by ``.``, ``-`` or
  ``_`` (``LM358B-Q1``, ``5.3.1``, ``snake_case``) form an identifier, emitted
  whole (lowercased, not stemmed) and as its parts, so either matches.
* Plain words are lowercased, dropped when they are English stop words (the
  Lucene list), and Snowball-stemmed (PyStemmer).
* Chinese, Japanese and Korean runs become their characters and character
  bigrams, so a query in those scripts finds its chunks without a dictionary.
* Version 2 (what builds write now) drops a word that is a single Latin letter
  (the ``s`` of ``DDC's``, initials, list markers), as standard BM25 tokenizers
  do; single digits, other scripts and CJK characters stay. Version 1 kept them;
  a file says which version built its index and its queries are tokenized the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

TOKENIZER_V1 = "urna-bm25-tokens/1 en-lucene-stop snowball-english cjk-bigram"
TOKENIZER_VERSION = "urna-bm25-tokens/2 en-lucene-stop snowball-english cjk-bigram no-latin-1"
TOKENIZERS = (TOKENIZER_V1, TOKENIZER_VERSION)
Tokenizer = Callable[[str], list[str]]

STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    }
)
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_WORD = rf"[^\W_{_CJK}]+"
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>{_WORD}(?:[._\-]{_WORD})*)")
_PARTS = re.compile(r"[._\-]")


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def _latin_letter(word: str) -> bool:
    """A one-character word that is a Latin letter (ASCII, Latin-1 and Latin Extended)."""
    return len(word) == 1 and word.isalpha() and ord(word) < 0x250


def _word(word: str, out: list[str], drop_letters: bool) -> None:
    if word in STOPWORDS or (drop_letters and _latin_letter(word)):
        return
    out.append(_stem(word) if word.isalpha() else word)


def _tokens(text: str, drop_letters: bool) -> list[str]:
    out: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        cjk = match.group("cjk")
        if cjk is not None:
            out.extend(cjk)
            out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
            continue
        token = match.group("word")
        if _PARTS.search(token):
            out.append(token)
            for part in _PARTS.split(token):
                _word(part, out, drop_letters)
        else:
            _word(token, out, drop_letters)
    return out


def tokenize(text: str) -> list[str]:
    """The tokens of ``text`` under the current version, in order (a token may repeat)."""
    return _tokens(text, True)


def tokenize_v1(text: str) -> list[str]:
    """The tokens of ``text`` under version 1 (single letters kept)."""
    return _tokens(text, False)


def tokenizer_for(name: str) -> Tokenizer | None:
    """The tokenizer a file's BM25 index names, or None when urna does not know it."""
    return {TOKENIZER_V1: tokenize_v1, TOKENIZER_VERSION: tokenize}.get(name)
