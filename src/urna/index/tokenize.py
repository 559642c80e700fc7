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
* Version 3 (what builds write now) follows Lucene's StandardTokenizer on joiners: a
  hyphen splits words (``plant-based`` is ``plant`` and ``base``; ``LM358B-Q1`` is
  ``lm358b`` and ``q1``), while ``.`` and ``_`` still join an identifier (``5.3.1``,
  ``snake_case``). It drops single digits as it drops single letters (``type 2`` is
  ``type``), and stems words that hold digits too (``cd4s`` is ``cd4``). **Queries**
  under version 3 also drop the 179 English stop words of NLTK's list (bm25s's
  ``en_plus``: ``how``, ``from``, ``my``...), so "how do I stop my bees from swarming"
  asks for ``stop``, ``bee`` and ``swarm``; documents keep Lucene's 33. Measured with
  ``benchmarks/tune_quality.py`` (nDCG@10, chunks alone): scifact train 0.684 -> 0.685
  (tokens) -> 0.686 (stop list), cranfield 0.362 -> 0.368 -> 0.376, verbose nfcorpus
  0.403 -> 0.408 -> 0.412; the train split keeps both, and BM25 in context (index/bm25.py)
  builds on them. The hyphen rule is Lucene's; whole hyphenated identifiers also
  tripled such a word's weight in a query.

* Version 4 is version 3 in another language (``index/languages.py``): that language's
  Snowball stemmer, and its NLTK stop words for documents and queries alike. Its name
  carries the language (``urna-bm25-tokens/4 lang=de ...``), so a file's queries are read
  as its chunks were. English stays version 3.
* Version 5 reads each chunk in its own document's language (``index/mixed.py``).

Written by hand: bm25s's and Lucene's analyzers split identifiers apart and know no CJK
bigrams without a dictionary; the rules above are a few lines over ``re`` and PyStemmer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

TOKENIZER_V1 = "urna-bm25-tokens/1 en-lucene-stop snowball-english cjk-bigram"
TOKENIZER_V2 = "urna-bm25-tokens/2 en-lucene-stop snowball-english cjk-bigram no-latin-1"
TOKENIZER_VERSION = (
    "urna-bm25-tokens/3 en-lucene-stop query-en-nltk-stop snowball-english cjk-bigram "
    "no-latin-1 no-digit-1 hyphen-split"
)
TOKENIZERS = (TOKENIZER_V1, TOKENIZER_V2, TOKENIZER_VERSION)
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
# NLTK's English list, as bm25s ships it (``en_plus``): dropped from version 3's queries.
_NLTK_STOPWORDS = """about above after again against ain all am any aren aren't because been before
    being
    below between both can couldn couldn't d did didn didn't do does doesn doesn't doing don
    don't down during each few from further had hadn hadn't has hasn hasn't have haven
    haven't having he her here hers herself him himself his how i isn isn't it's its itself
    just ll m ma me mightn mightn't more most mustn mustn't my myself needn needn't nor now o
    off once only other our ours ourselves out over own re s same shan shan't she she's should
    should've shouldn shouldn't so some t than that'll theirs them themselves those through
    too under until up ve very wasn wasn't we were weren weren't what when where which while
    who whom why won won't wouldn wouldn't y you you'd you'll you're you've your yours
    yourself yourselves"""
QUERY_STOPWORDS = STOPWORDS | frozenset(_NLTK_STOPWORDS.split())
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_WORD = rf"[^\W_{_CJK}]+"
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>{_WORD}(?:[._\-]{_WORD})*)")
_PARTS = re.compile(r"[._\-]")


@lru_cache(maxsize=64)
def _stemmer(algorithm: str = "english") -> Any:
    import Stemmer

    return Stemmer.Stemmer(algorithm)


@lru_cache(maxsize=200_000)
def _stem(word: str, algorithm: str = "english") -> str:
    return str(_stemmer(algorithm).stemWord(word))


def _latin_letter(word: str) -> bool:
    """A one-character word that is a Latin letter (ASCII, Latin-1 and Latin Extended)."""
    return len(word) == 1 and word.isalpha() and ord(word) < 0x250


@dataclass(frozen=True)
class _Rules:
    drop_letters: bool = True
    drop_digits: bool = False
    stem_digits: bool = False
    hyphen_splits: bool = False
    stopwords: frozenset[str] = STOPWORDS
    stemmer: str = "english"  # the Snowball algorithm


def _dropped_single(char: str, rules: _Rules) -> bool:
    return (rules.drop_letters and _latin_letter(char)) or (rules.drop_digits and char.isdigit())


def _word(word: str, out: list[str], rules: _Rules) -> None:
    if word in rules.stopwords or (len(word) == 1 and _dropped_single(word, rules)):
        return
    stemmed = word.isalpha() or (rules.stem_digits and not word.isdigit())
    out.append(_stem(word, rules.stemmer) if stemmed else word)


def _tokens(text: str, rules: _Rules) -> list[str]:
    out: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        cjk = match.group("cjk")
        if cjk is not None:
            out.extend(cjk)
            out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
            continue
        token = match.group("word")
        if not _PARTS.search(token):
            _word(token, out, rules)
            continue
        if rules.hyphen_splits and "-" in token:  # each hyphenated piece stands alone
            for piece in token.split("-"):
                if piece:
                    _joined(piece, out, rules)
        else:
            _joined(token, out, rules)
    return out


def _joined(token: str, out: list[str], rules: _Rules) -> None:
    """A word or an identifier: the identifier whole (not stemmed), then its parts."""
    if not _PARTS.search(token):
        _word(token, out, rules)
        return
    out.append(token)
    for part in _PARTS.split(token):
        _word(part, out, rules)


_V1 = _Rules(drop_letters=False)
_V2 = _Rules()
_V3 = _Rules(drop_digits=True, stem_digits=True, hyphen_splits=True)
_V3_QUERY = replace(_V3, stopwords=QUERY_STOPWORDS)


def tokenize(text: str) -> list[str]:
    """The tokens of ``text`` under the current version, in order (a token may repeat)."""
    return _tokens(text, _V3)


def tokenize_query(text: str) -> list[str]:
    """A query's tokens under the current version (NLTK's stop words dropped too)."""
    return _tokens(text, _V3_QUERY)


def tokenize_v1(text: str) -> list[str]:
    """The tokens of ``text`` under version 1 (single letters kept)."""
    return _tokens(text, _V1)


def tokenize_v2(text: str) -> list[str]:
    """The tokens of ``text`` under version 2 (documents and queries alike)."""
    return _tokens(text, _V2)


V4 = "urna-bm25-tokens/4"
# Version 5: each chunk read in its document's language, its ``lang`` field (index/mixed.py)
PER_DOCUMENT = (
    "urna-bm25-tokens/5 lang=auto field=lang nltk-stop snowball cjk-bigram no-latin-1 "
    "no-digit-1 hyphen-split"
)


def tokenizer_name(lang: str | None) -> str:
    """The tokenizer a build in ``lang`` records: version 3 for English (and for Chinese,
    Japanese and Korean, read as bigrams and English), else version 4 in that language."""
    from urna.index.languages import AS_ENGLISH, LANGUAGES

    if lang is None or lang in AS_ENGLISH:
        return TOKENIZER_VERSION
    if lang == "auto":
        return PER_DOCUMENT
    algorithm, stop = LANGUAGES[lang]
    stops = f"{lang}-nltk-stop" if stop else "no-stop"
    rest = "cjk-bigram no-latin-1 no-digit-1 hyphen-split"
    return f"{V4} lang={lang} {stops} snowball-{algorithm} {rest}"


def language_of(name: str | None) -> str:
    """The language a tokenizer name reads (``en`` for versions 1 to 3, ``auto`` for 5)."""
    if name == PER_DOCUMENT:
        return "auto"
    if name and name.startswith(V4 + " lang="):
        return name[len(V4) + 6 :].split(" ", 1)[0]
    return "en"


@lru_cache(maxsize=64)
def read_in(lang: str) -> Tokenizer:
    """How a document in ``lang`` is read: version 3 for English (and Chinese, Japanese and
    Korean), version 4's rules in that language otherwise."""
    from urna.index.languages import AS_ENGLISH, LANGUAGES, stop_words

    if lang in AS_ENGLISH:
        return tokenize
    rules = replace(_V3, stopwords=stop_words(lang), stemmer=LANGUAGES[lang][0])
    return lambda text: _tokens(text, rules)


def query_in(lang: str) -> Tokenizer:
    """How a query in ``lang`` is read (version 3 drops NLTK's English stop words too)."""
    from urna.index.languages import AS_ENGLISH

    return tokenize_query if lang in AS_ENGLISH else read_in(lang)


def _language_tokenizer(name: str) -> Tokenizer | None:
    """Version 4's tokenizer for ``name`` (documents and queries alike), or None when the
    name is not one urna writes."""
    from urna.index.languages import LANGUAGES

    lang = language_of(name)
    if lang not in LANGUAGES or tokenizer_name(lang) != name:
        return None
    return read_in(lang)


_BY_NAME: dict[str, Tokenizer] = {}


def tokenizer_for(name: str) -> Tokenizer | None:
    """The document tokenizer a file's BM25 index names, or None when urna does not know it."""
    known = {TOKENIZER_V1: tokenize_v1, TOKENIZER_V2: tokenize_v2, TOKENIZER_VERSION: tokenize}
    known[PER_DOCUMENT] = tokenize  # a chunk without a language field (``index/mixed.py``)
    if name in known:
        return known[name]
    found = _BY_NAME.get(name)
    if found is None and name.startswith(V4 + " "):
        found = _language_tokenizer(name)
        if found is not None:  # only names urna writes are kept (a hostile file's are not)
            _BY_NAME[name] = found
    return found


def query_tokenizer_for(name: str) -> Tokenizer | None:
    """How queries to an index of tokenizer ``name`` are tokenized (None: unknown)."""
    if name in (TOKENIZER_VERSION, PER_DOCUMENT):  # 5: a searcher reads by its languages
        return tokenize_query
    return tokenizer_for(name)
