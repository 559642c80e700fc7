"""Structure-aware chunking by the model's tokens, with exact byte spans.

Blocks are packed in order into chunks of at most ``max_tokens`` tokens
(counted by the embedding model's own tokenizer). A heading always starts a
new chunk, and the heading line is the chunk's first line. A block too big
for one chunk is split at sentence ends, and a sentence too big at word
boundaries. Every chunk is one contiguous half-open byte range of the
document's data, and its text is exactly those bytes, so the span can be
checked against the source. With ``overlap_tokens``, a chunk may start with
the last pieces of the one before it (within the same section).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from urna.ingest.document import Document

CHUNKER_VERSION = "urna-structure/1"
TokenCounter = Callable[[Sequence[str]], list[int]]

_SENTENCE_END = re.compile(
    rb"(?<=[.!?;:])[\"')\]]*\s+|(?<=\xe3\x80\x82)|(?<=\xef\xbc\x81)|(?<=\xef\xbc\x9f)"
)
_WORD = re.compile(rb"\S+\s*")


@dataclass(frozen=True)
class Piece:
    start: int
    end: int
    tokens: int
    heading: bool
    section: tuple[str, ...]
    page: int


@dataclass(frozen=True)
class ChunkSpan:
    """One chunk of a document: where it is, what it says, and where it sits in the structure."""

    source_uri: str
    byte_start: int
    byte_end: int
    text: str
    tokens: int
    section_path: str
    page: int
    source_ordinal: int  # 1-based, within its source
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def _split(
    doc: Document, start: int, end: int, pattern: re.Pattern[bytes]
) -> list[tuple[int, int]]:
    parts, pos = [], start
    for m in pattern.finditer(doc.data, start, end):
        if m.end() > pos and m.end() < end:
            cut = m.end()
            parts.append((pos, cut))
            pos = cut
    parts.append((pos, end))
    return [(a, b) for a, b in ((a, _rstrip(doc.data, a, b)) for a, b in parts) if b > a]


def _rstrip(data: bytes, start: int, end: int) -> int:
    while end > start and data[end - 1] in b" \t\r\n":
        end -= 1
    return end


def _fit(
    doc: Document,
    start: int,
    end: int,
    limit: int,
    count: TokenCounter,
    depth: int = 0,
    tokens: int | None = None,
) -> list[tuple[int, int, int]]:
    """(start, end, tokens) pieces of [start, end), each within ``limit`` tokens."""
    if tokens is None:
        (tokens,) = count([doc.text(start, end)])
    if tokens <= limit:
        return [(start, end, tokens)]
    pattern = _SENTENCE_END if depth == 0 else _WORD
    parts = _split(doc, start, end, pattern)
    if len(parts) == 1:
        if depth == 0:
            return _fit(doc, start, end, limit, count, 1)
        # One word longer than the window: cut it at UTF-8 character boundaries.
        return _cut_word(doc, start, end, limit, count)
    counts = count([doc.text(a, b) for a, b in parts])
    out: list[tuple[int, int, int]] = []
    cur_start, cur_end, cur_tokens = parts[0][0], parts[0][0], 0
    for (a, b), n in zip(parts, counts, strict=True):
        if n > limit:
            if cur_end > cur_start:
                out.append((cur_start, cur_end, cur_tokens))
            out.extend(_fit(doc, a, b, limit, count, depth + 1, n))
            cur_start, cur_end, cur_tokens = b, b, 0
            continue
        if cur_end > cur_start and cur_tokens + n > limit:
            out.append((cur_start, cur_end, cur_tokens))
            cur_start, cur_tokens = a, 0
        cur_end = b
        cur_tokens += n
    if cur_end > cur_start:
        out.append((cur_start, cur_end, cur_tokens))
    # Sums of parts approximate the joined count: re-count those near the limit.
    near = [i for i, (_, _, n) in enumerate(out) if n + JOIN_MARGIN * 8 > limit]
    exact = [n for _, _, n in out]
    for i, n in zip(near, count([doc.text(out[i][0], out[i][1]) for i in near]), strict=True):
        exact[i] = n
    fixed: list[tuple[int, int, int]] = []
    for (a, b, _), n in zip(out, exact, strict=True):
        if n > limit and depth < 2:
            fixed.extend(_fit(doc, a, b, limit, count, depth + 1))
        elif n > limit:
            fixed.extend(_cut_word(doc, a, b, limit, count))
        else:
            fixed.append((a, b, n))
    return fixed


def _cut_word(
    doc: Document, start: int, end: int, limit: int, count: TokenCounter
) -> list[tuple[int, int, int]]:
    out = []
    pos = start
    while pos < end:
        lo, hi = pos + 1, end
        best = pos + 1
        while lo <= hi:  # the longest prefix within the limit, on a character boundary
            mid = (lo + hi) // 2
            while mid < end and (doc.data[mid] & 0xC0) == 0x80:
                mid += 1
            (n,) = count([doc.data[pos:mid].decode("utf-8")])
            if n <= limit:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        while best < end and (doc.data[best] & 0xC0) == 0x80:
            best += 1
        (n,) = count([doc.data[pos:best].decode("utf-8")])
        out.append((pos, best, n))
        pos = best
    return out


def _pieces(
    doc: Document, limit: int, count: TokenCounter, counts: Sequence[int] | None
) -> list[Piece]:
    stack: list[tuple[int, str]] = []
    pieces: list[Piece] = []
    if counts is None:
        texts = [doc.text(b.start, b.end) for b in doc.blocks]
        counts = count(texts) if texts else []
    for block, tokens in zip(doc.blocks, counts, strict=True):
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            title = block.title or doc.text(block.start, block.end).lstrip("#").strip()
            stack.append((block.level, title))
        section = tuple(title for _, title in stack)
        if tokens <= limit:
            pieces.append(
                Piece(block.start, block.end, tokens, block.kind == "heading", section, block.page)
            )
        else:
            fitted = _fit(doc, block.start, block.end, limit, count, tokens=tokens)
            for i, (a, b, n) in enumerate(fitted):
                pieces.append(
                    Piece(a, b, n, block.kind == "heading" and i == 0, section, block.page)
                )
    return pieces


# A join between two pieces can change the token count by a few tokens at most (a
# separator token, or two word pieces merging); groups within this margin per join of
# the limit are re-counted exactly, the others are known to fit.
JOIN_MARGIN = 2


def chunk_documents(
    docs: Sequence[Document], count: TokenCounter, *, max_tokens: int, overlap_tokens: int = 0
) -> list[list[ChunkSpan]]:
    """``chunk_document`` over many documents, their blocks counted in one batched call."""
    texts = [d.text(b.start, b.end) for d in docs for b in d.blocks]
    counts = count(texts) if texts else []
    out, pos = [], 0
    for d in docs:
        mine = counts[pos : pos + len(d.blocks)]
        pos += len(d.blocks)
        out.append(
            chunk_document(
                d, count, max_tokens=max_tokens, overlap_tokens=overlap_tokens, block_counts=mine
            )
        )
    return out


def chunk_document(
    doc: Document,
    count: TokenCounter,
    *,
    max_tokens: int,
    overlap_tokens: int = 0,
    block_counts: Sequence[int] | None = None,
) -> list[ChunkSpan]:
    """Pack a document's blocks into chunks of at most ``max_tokens`` tokens."""
    if max_tokens < 8:
        raise ValueError(f"max_tokens must be at least 8, got {max_tokens}")
    if not 0 <= overlap_tokens < max_tokens // 2:
        raise ValueError(f"overlap_tokens must be in [0, {max_tokens // 2}), got {overlap_tokens}")
    pieces = _pieces(doc, max_tokens, count, block_counts)
    groups: list[list[Piece]] = []
    current: list[Piece] = []
    total = 0
    for piece in pieces:
        # A heading starts a new chunk, unless the chunk so far holds only headings.
        starts_section = piece.heading and current and not all(p.heading for p in current)
        if starts_section or (current and total + piece.tokens > max_tokens):
            groups.append(current)
            carry: list[Piece] = []
            if overlap_tokens and not starts_section:
                budget = overlap_tokens
                for prev in reversed(current):
                    if prev.tokens > budget or prev.section != piece.section or prev.heading:
                        break
                    carry.insert(0, prev)
                    budget -= prev.tokens
            while carry and sum(p.tokens for p in carry) + piece.tokens > max_tokens:
                carry.pop(0)
            current, total = list(carry), sum(p.tokens for p in carry)
        current.append(piece)
        total += piece.tokens
    if current:
        groups.append(current)
    chunks: list[ChunkSpan] = []
    i = 0
    while i < len(groups):
        group = groups[i]
        text = doc.text(group[0].start, group[-1].end)
        tokens = sum(p.tokens for p in group)
        if len(group) > 1 and tokens + JOIN_MARGIN * (len(group) - 1) > max_tokens:
            (tokens,) = count([text])
        if tokens > max_tokens and len(group) > 1:
            # Tokens can merge across a join: move the last piece on to a chunk of its own.
            groups[i : i + 1] = [group[:-1], group[-1:]]
            continue
        chunks.append(
            ChunkSpan(
                source_uri=doc.source_uri,
                byte_start=group[0].start,
                byte_end=group[-1].end,
                text=text,
                tokens=tokens,
                section_path=" / ".join(group[-1].section),
                page=group[0].page,
                source_ordinal=len(chunks) + 1,
                metadata=doc.metadata,
            )
        )
        i += 1
    return chunks
