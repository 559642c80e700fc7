"""Snippets centred on the query's terms, not just a text's first characters."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

WIDTH = 240


MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
_TAGS = (
    "a|abbr|b|br|code|del|details|div|em|h[1-6]|hr|i|img|ins|kbd|li|mark|ol|p|pre|s|small|"
    "span|strong|sub|summary|sup|table|tbody|td|th|thead|tr|u|ul"
)
_CODE = re.compile(r"(`+)([^`\n]+?)\1")
_MARKDOWN = [
    (re.compile(r"^\s*(```|~~~).*$", re.MULTILINE), ""),  # code fences
    (re.compile(r"^\s*\|?(\s*:?-{3,}:?\s*\|)+\s*:?-{0,}:?\s*$", re.MULTILINE), ""),  # table rules
    (re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$", re.MULTILINE), ""),  # horizontal rules
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # images: their alt text
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # links: their label
    (re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE), ""),  # heading marks
    (re.compile(r"^\s{0,3}>\s?", re.MULTILINE), ""),  # quotes
    (re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?", re.MULTILINE), ""),  # lists
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),  # strong
    (re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # emphasis
    (re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])"), r"\1"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1"),  # strikethrough
    (re.compile(rf"</?(?:{_TAGS})(?:\s[^<>\n]{{0,200}})?/?>", re.IGNORECASE), ""),  # HTML tags
    (re.compile(r"[ \t]*\|[ \t]*"), " "),  # table cells
]


def plain(text: str, source_uri: str = "") -> str:
    """``text`` without Markdown markup when its source is Markdown (else unchanged): what a
    reader sees rendered, for snippets. The stored text and its byte span are not touched."""
    if not source_uri.lower().endswith(MARKDOWN_SUFFIXES):
        return text
    spans: list[str] = []  # inline code is shown as it is, markup inside it included

    def keep(m: re.Match[str]) -> str:
        spans.append(m.group(2))
        return f"\x00{len(spans) - 1}\x00"

    text = _CODE.sub(keep, text.replace("\x00", ""))
    for pattern, replacement in _MARKDOWN:
        text = pattern.sub(replacement, text)
    return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], text)


def term_pattern(terms: Sequence[str]) -> re.Pattern[str] | None:
    """What a snippet centres on and a shell highlights: the words matching query terms."""
    return _pattern(tuple(sorted({t.lower() for t in terms if t})))


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
    pattern = term_pattern(terms)
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
