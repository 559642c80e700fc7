"""Snippets centred on the query's terms, not just a text's first characters."""

from __future__ import annotations

import re
from collections.abc import Sequence

WIDTH = 240
_WORDS = re.compile(r"\w+", re.UNICODE)


def snippet(text: str, terms: Sequence[str], width: int = WIDTH) -> str:
    """About ``width`` characters of ``text`` around the densest run of query terms."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    wanted = {t.lower() for t in terms if t}
    hits = []
    for m in _WORDS.finditer(flat):
        word = m.group().lower()
        if word in wanted or any(word.startswith(t) for t in wanted if len(t) >= 3):
            hits.append(m.start())
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
