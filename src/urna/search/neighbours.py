"""A chunk's neighbours in its source: the chunks just before and after it, for context.

A build writes each source's chunks in order, one after the other (a collection keeps each
source in one shard), so the neighbours are the adjacent ordinals that share the source.
"""

from __future__ import annotations

from dataclasses import dataclass

from urna.errors import QueryError
from urna.format.chunks import Chunk
from urna.search.protocol import Searchable

MAX_NEIGHBOURS = 20


@dataclass(frozen=True)
class Passage:
    """A chunk with up to ``before`` and ``after`` chunks of the same source around it."""

    chunk: Chunk
    before: list[Chunk]
    after: list[Chunk]


def neighbours(corpus: Searchable, chunk: Chunk, *, before: int = 1, after: int = 1) -> Passage:
    for name, count in (("before", before), ("after", after)):
        if isinstance(count, bool) or not 0 <= count <= MAX_NEIGHBOURS:
            raise QueryError(f"invalid {name}: {count} (expected 0 to {MAX_NEIGHBOURS})")
    earlier: list[Chunk] = []
    i = chunk.ordinal - 1
    while i >= 0 and len(earlier) < before:
        c = corpus.chunk(i)
        if c.source_uri != chunk.source_uri:
            break
        earlier.append(c)
        i -= 1
    later: list[Chunk] = []
    i = chunk.ordinal + 1
    while i < corpus.n_chunks and len(later) < after:
        c = corpus.chunk(i)
        if c.source_uri != chunk.source_uri:
            break
        later.append(c)
        i += 1
    return Passage(chunk, earlier[::-1], later)
