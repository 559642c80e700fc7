"""The languages whose words BM25 can read in their own way: each one's Snowball stemmer
(PyStemmer) and stop words (NLTK's lists, as bm25s ships them).

A corpus is analysed in one language, declared at build (``--lang de``, the spec's
``[index] lang``) and recorded in its BM25 tokenizer's name (``index/tokenize.py``, version
4), so its queries are read the same way. English keeps version 3 exactly, so an English
build's bytes and answers do not move. Chinese, Japanese and Korean text is read as
character bigrams in every language (a script rule, ``index/tokenize.py``), and its Latin
words as English.

Written by hand: a table from ISO 639-1 codes to the names PyStemmer and bm25s use.
"""

from __future__ import annotations

from functools import lru_cache

from urna.errors import BuildError

# ISO 639-1 code -> (Snowball algorithm, bm25s stop list name or "" for none)
LANGUAGES: dict[str, tuple[str, str]] = {
    "en": ("english", "EN"),
    "ar": ("arabic", ""),
    "ca": ("catalan", ""),
    "da": ("danish", "DANISH"),
    "de": ("german", "GERMAN"),
    "el": ("greek", ""),
    "es": ("spanish", "SPANISH"),
    "eu": ("basque", ""),
    "fi": ("finnish", ""),
    "fr": ("french", "FRENCH"),
    "ga": ("irish", ""),
    "hi": ("hindi", ""),
    "hu": ("hungarian", ""),
    "hy": ("armenian", ""),
    "id": ("indonesian", ""),
    "it": ("italian", "ITALIAN"),
    "lt": ("lithuanian", ""),
    "ne": ("nepali", ""),
    "nl": ("dutch", "DUTCH"),
    "no": ("norwegian", "NORWEGIAN"),
    "pt": ("portuguese", "PORTUGUESE"),
    "ro": ("romanian", ""),
    "ru": ("russian", "RUSSIAN"),
    "sr": ("serbian", ""),
    "sv": ("swedish", "SWEDISH"),
    "ta": ("tamil", ""),
    "tr": ("turkish", "TURKISH"),
}
# Read as English (their Latin words) plus CJK bigrams: version 3's rules.
AS_ENGLISH = ("en", "zh", "ja", "ko")


KNOWN = ", ".join(sorted({*LANGUAGES, *AS_ENGLISH}))
# A query's language as a pattern of the codes BM25 reads (HTTP and MCP schemas say it).
PATTERN = "^(" + KNOWN.replace(", ", "|") + ")$"


def code_of(value: object) -> str | None:
    """``value`` (``de``, `` DE ``) as a code BM25 reads, lowercased; None otherwise."""
    code = value.strip().lower() if isinstance(value, str) else ""
    return code if code in LANGUAGES or code in AS_ENGLISH else None


def checked(code: str) -> str:
    """``code`` as a language BM25 can read (or ``auto``: each document in its own,
    ``index/mixed.py``), or a BuildError naming those it can."""
    lang = code.strip().lower()
    if code_of(lang) is None and lang != "auto":
        raise BuildError(
            f"unknown language {code!r} for --lang; known: {KNOWN}, or auto (each "
            "document in its own)"
        )
    return lang


@lru_cache(maxsize=32)
def stop_words(lang: str) -> frozenset[str]:
    """NLTK's stop words for ``lang`` (empty where it has none)."""
    name = LANGUAGES[lang][1]
    if not name:
        return frozenset()
    from bm25s import stopwords

    return frozenset(getattr(stopwords, f"STOPWORDS_{name}"))
