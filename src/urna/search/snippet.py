"""Snippets centred on the query's terms, not just a text's first characters."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

WIDTH = 240


@lru_cache(maxsize=256)
def _pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """Words equal to a short term, or starting with a longer one (terms are stems)."""
    if not terms:
        return None
    alternatives = [re.escape(t) + (r"\w*" if len(t) >= 3 else r"\b") for t in terms]
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + ")", re.IGNORECASE)


def snippet(text: str, terms: Sequence[str], width: int = WIDTH) -> str:
    """About ``width`` characters of ``text`` around the densest run of query terms."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    pattern = _pattern(tuple(sorted({t.lower() for t in terms if t})))
    hits = [m.start() for m in pattern.finditer(flat)] if pattern is not None else []
    if not hits:
        start = 0
    else:
        # The window start that covers the most hits.
        best, start, j = 0, hits[0], 0
        for i, pos in enumerate(hits):
            while hits[j] < pos - width // 2:
                j += 1
            if i - j + 1 > best:
                best, start = i - j + 1, hits[j]
        start = max(0, start - width // 4)
    end = min(len(flat), start + width)
    start = max(0, end - width)
    # Snap to word boundaries.
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    if end < len(flat):
        space = flat.rfind(" ", end - 20, end)
        end = space if space > start else end
    return ("… " if start > 0 else "") + flat[start:end] + (" …" if end < len(flat) else "")
