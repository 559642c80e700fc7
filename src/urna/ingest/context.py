"""What a chunk's embedding sees: its text, preceded by where it sits in its document.

A chunk is stored as exactly its source bytes, but embedded alone a record's or a
section's later chunks lose the title and headings that say what they are about. The
context recipe puts them back into the *embedded* text only:

* ``urna-context/1``: the chunk's section path (``Guide / Install``), unless the chunk
  starts with the path's top heading (a record's first chunk starts with its title, a
  document's first chunk with its ``# Title``, so it carries them); for a chunk of a
  document without headings, past its first chunk, the document's lead (the first line of
  its first chunk, at most ``LEAD_WORDS`` words). The context and the text are joined by a
  blank line.
* ``none``: the text alone (files built before the recipe existed record no recipe).

The embedded text is a function of what the file stores (text, section path, source and
position in the source), so anyone can recompute it from a file and its recorded recipe,
and the embedding cache, keyed by the embedded text, follows it. Chunk ids, spans and the
stored text do not depend on the recipe.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

CONTEXT_RECIPE = "urna-context/1 section-path lead-16"
NO_CONTEXT = "none"
RECIPES = (NO_CONTEXT, CONTEXT_RECIPE)
LEAD_WORDS = 16
_MARKUP = re.compile(r"^[#>*\-\s]+")


class Placed(Protocol):
    """The stored facts of one chunk that decide its context (a ChunkSpan or a read Chunk)."""

    @property
    def text(self) -> str: ...

    @property
    def section_path(self) -> str: ...

    @property
    def source_uri(self) -> str: ...

    @property
    def source_ordinal(self) -> int: ...


def lead(first_chunk_text: str) -> str:
    """A document's lead: the first line of its first chunk, at most LEAD_WORDS words."""
    for line in first_chunk_text.splitlines():
        words = line.split()
        if words:
            return " ".join(words[:LEAD_WORDS])
    return ""


def _starts_with_top(text: str, path: str) -> bool:
    top = path.split(" / ", 1)[0]
    return _MARKUP.sub("", text, count=1).startswith(top)


def context_of(chunk: Placed, leads: dict[str, str]) -> str:
    """The context line(s) ``urna-context/1`` puts before this chunk's text ('' for none)."""
    if chunk.section_path:
        return "" if _starts_with_top(chunk.text, chunk.section_path) else chunk.section_path
    if chunk.source_ordinal > 1:
        return leads.get(chunk.source_uri, "")
    return ""


def embedded_texts(chunks: Sequence[Placed], recipe: str = CONTEXT_RECIPE) -> list[str]:
    """The text each chunk's vector embeds under ``recipe``, in order."""
    if recipe == NO_CONTEXT:
        return [c.text for c in chunks]
    if recipe != CONTEXT_RECIPE:
        raise ValueError(f"unknown context recipe {recipe!r}: expected one of {RECIPES}")
    leads = {c.source_uri: lead(c.text) for c in chunks if c.source_ordinal == 1}
    out = []
    for chunk in chunks:
        context = context_of(chunk, leads)
        out.append(f"{context}\n\n{chunk.text}" if context else chunk.text)
    return out


def bm25_texts(chunks: Sequence[Placed], recipe: str | None) -> list[str]:
    """What BM25 indexes per chunk: with a context recipe, the text the vector embedded (the
    chunk in its context); without one (``None``), the chunk's text and its section path."""
    if recipe is not None:
        return embedded_texts(chunks, recipe)
    return [c.text + ("\n" + c.section_path if c.section_path else "") for c in chunks]
