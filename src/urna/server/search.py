"""The compatible routes' two branches and their grouped shape (KuraDB's contract)."""

from __future__ import annotations

from typing import Any

from urna.search.protocol import Searchable
from urna.search.request import Query
from urna.search.result import Hit
from urna.search.text import has_words

SEMANTIC_FLOOR = 0.3  # semantic hits below this cosine are dropped (the compatible contract)
MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100


def keyword_hits(corpus: Searchable, q: str, limit: int) -> list[Hit]:
    if not corpus.has_text_index or not has_words(q):  # the contract: no error, no hits
        return []
    return corpus.run(Query(text=q, k=limit, mode="text")).hits


def semantic_hits(corpus: Searchable, q: str, limit: int) -> list[Hit]:
    if not has_words(q):
        return []
    hits = corpus.run(Query(text=q, k=limit, mode="vector")).hits
    return [h for h in hits if h.score >= SEMANTIC_FLOOR]


def grouped(hits: list[Hit]) -> list[dict[str, Any]]:
    """One group per source, in order of each group's best hit; matches keep hit order.

    ``chunk`` (the 1-based position of the chunk in its source) and ``content`` are the
    contract; the other fields are extras the contract allows, named as it names them."""
    groups: dict[str, dict[str, Any]] = {}
    for h in hits:
        group = groups.setdefault(h.source_uri, {"source": h.source_uri, "matches": []})
        group["matches"].append(
            {
                "chunk": h.source_ordinal or h.ordinal + 1,
                "content": h.text,
                "score": h.score,
                "citation_id": h.citation_id,
                "offset": f"{h.byte_start}-{h.byte_end}",
                "section_path": h.section_path,
            }
        )
    return list(groups.values())
