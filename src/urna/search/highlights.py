"""Highlights for programs: the byte ranges, within a hit's text, of the words that matched
the query's terms as the file's BM25 tokenizer reads them (case, stemming and stop words
as BM25 reads them, so ``swarming`` is marked for ``swarm``).

Each word of the text (a run of letters and digits) is read by the tokenizer only when it
starts as one of the terms does (its first three characters), so a hit costs a regular
expression pass and a few tokenizer calls, not one per word. Ranges are ``[start, end)`` in
the UTF-8 bytes of the hit's ``text``, in order; a phrase's words are marked each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=256)
def _starts(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    heads = sorted({t[:3] for t in terms if t})
    if not heads:
        return None
    return re.compile("|".join(re.escape(h) for h in heads), re.IGNORECASE)


def highlights(
    text: str, terms: Sequence[str], tokenize: Callable[[str], list[str]]
) -> list[list[int]]:
    """``[[start, end], ...]``: the bytes of each word of ``text`` that reads as a term."""
    wanted = set(terms)
    starts = _starts(tuple(sorted(wanted)))
    if starts is None:
        return []
    found: list[tuple[int, int]] = []
    for match in WORD.finditer(text):
        word = match.group(0)
        if starts.match(word) and any(t in wanted for t in tokenize(word)):
            found.append(match.span())
    out, at, byte = [], 0, 0
    for start, end in found:  # characters to bytes, one pass over the text
        byte += len(text[at:start].encode("utf-8"))
        length = len(text[start:end].encode("utf-8"))
        out.append([byte, byte + length])
        byte, at = byte + length, end
    return out
