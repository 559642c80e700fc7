"""Snippets centred on the query's terms, not just a text's first characters.

A hit's snippet is built from its highlights (``search/highlights.py``: the words its
file's tokenizer reads as the query's terms), so it centres on the words that matched,
stems included, and a shell can mark exactly those words: each highlight is fenced by two
control characters before the Markdown markup is taken out, and found again after. A text
with no highlights (a vector hit) centres on the words that start as a term does.
"""

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


OPEN, CLOSE = "\x01", "\x02"  # a highlight's fences, while markup is taken out


def snippet(text: str, terms: Sequence[str], width: int = WIDTH) -> str:
    """About ``width`` characters of ``text`` around the densest run of query terms."""
    return around(text, terms=terms, width=width)[0]


def around(
    text: str,
    source_uri: str = "",
    marks: Sequence[Sequence[int]] = (),
    terms: Sequence[str] = (),
    width: int = WIDTH,
) -> tuple[str, list[tuple[int, int]]]:
    """The snippet of ``text`` (Markdown markup out when ``source_uri`` is Markdown) around
    the densest run of ``marks`` (byte ranges of ``text``, its highlights), or of words
    starting as ``terms`` do when there are none; and the character spans of the marks it
    shows."""
    fenced = _fenced(text.replace(OPEN, "").replace(CLOSE, ""), marks)
    flat, spans = _unfenced(" ".join(plain(fenced, source_uri).split()))
    if not spans:
        pattern = term_pattern(terms)
        spans = [m.span() for m in pattern.finditer(flat)] if pattern is not None else []
    if len(flat) <= width:
        return flat, spans
    start = _densest([s for s, _ in spans], width)
    end = min(len(flat), start + width)
    start = max(0, end - width)
    if start > 0:  # snap to word boundaries
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    if end < len(flat):
        space = flat.rfind(" ", end - 20, end)
        end = space if space > start else end
    lead = "… " if start > 0 else ""
    shown = [
        (a - start + len(lead), b - start + len(lead)) for a, b in spans if a >= start and b <= end
    ]
    return lead + flat[start:end] + (" …" if end < len(flat) else ""), shown


def _densest(starts: Sequence[int], width: int) -> int:
    """Where a window of ``width`` holding the most of ``starts`` begins (a little before
    the first it holds); 0 when there are none."""
    if not starts:
        return 0
    best, start, j = 0, starts[0], 0
    for i, pos in enumerate(starts):
        while starts[j] < pos - width // 2:
            j += 1
        if i - j + 1 > best:
            best, start = i - j + 1, starts[j]
    return max(0, start - width // 4)


def _fenced(text: str, marks: Sequence[Sequence[int]]) -> str:
    """``text`` with each mark (a byte range) fenced by OPEN and CLOSE."""
    if not marks:
        return text
    data = text.encode("utf-8")
    pieces, at = [], 0
    for start, end in marks:
        if start < at or end > len(data):
            continue  # out of order or out of the text: not a mark of this text
        pieces += [data[at:start], OPEN.encode(), data[start:end], CLOSE.encode()]
        at = end
    pieces.append(data[at:])
    return b"".join(pieces).decode("utf-8", errors="replace")


def _unfenced(flat: str) -> tuple[str, list[tuple[int, int]]]:
    """``flat`` without its fences, and the character spans they enclosed (non-empty)."""
    if OPEN not in flat:
        return flat, []
    out: list[str] = []
    spans, size, opened = [], 0, -1
    for piece in re.split(f"([{OPEN}{CLOSE}])", flat):
        if piece == OPEN:
            opened = size
        elif piece == CLOSE:
            if 0 <= opened < size:
                spans.append((opened, size))
            opened = -1
        else:
            out.append(piece)
            size += len(piece)
    return "".join(out), spans
