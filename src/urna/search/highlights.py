"""Highlights for programs: the byte ranges, within a hit's text, of the words that matched
the query's terms as the file's BM25 tokenizer reads them (case, stemming and stop words
as BM25 reads them, so ``swarming`` is marked for ``swarm``).

One regular expression finds the words (runs of letters and digits) that start as one of
the terms does (its first three characters); only those are read by the tokenizer, each
distinct word once (``READ``, kept across hits), so a hit costs one pass in C and a few
look-ups, not a Python step per word. Ranges are ``[start, end)`` in
the UTF-8 bytes of the hit's ``text``, in order; a phrase's words are marked each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

READ = 1 << 16  # words whose tokens are kept (a few MB at most)


@lru_cache(maxsize=256)
def _starts(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """Whole words that start with a term's first three characters."""
    heads = sorted({t[:3] for t in terms if t})
    if not heads:
        return None
    alternatives = "|".join(re.escape(h) for h in heads)
    return re.compile(rf"(?<!\w)(?:{alternatives})\w*", re.IGNORECASE)


@lru_cache(maxsize=READ)
def _read(tokenize: Callable[[str], list[str]], word: str) -> tuple[str, ...]:
    return tuple(tokenize(word))


def highlights(
    text: str, terms: Sequence[str], tokenize: Callable[[str], list[str]]
) -> list[list[int]]:
    """``[[start, end], ...]``: the bytes of each word of ``text`` that reads as a term."""
    wanted = set(terms)
    starts = _starts(tuple(sorted(wanted)))
    if starts is None:
        return []
    found: list[tuple[int, int]] = []
    for match in starts.finditer(text):
        if any(t in wanted for t in _read(tokenize, match.group(0))):
            found.append(match.span())
    out, at, byte = [], 0, 0
    for start, end in found:  # characters to bytes, one pass over the text
        byte += len(text[at:start].encode("utf-8"))
        length = len(text[start:end].encode("utf-8"))
        out.append([byte, byte + length])
        byte, at = byte + length, end
    return out
