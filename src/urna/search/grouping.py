"""Results grouped by document (``group="document"``): the best chunk of each of k
documents, with how many more of its chunks matched.

The ranked list is read deep enough to hold k documents: first 4k chunks, then four times
as deep each time the documents run short, until k documents are found or the chunks
that can match are all ranked. A document's best chunk keeps its score and place; its
other chunks count in ``more`` (among those ranked: a document's chunks below the depth
read are not counted, and the result says how deep it read).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from urna.search.request import Query
from urna.search.result import SearchResult

DEPTH = 4  # chunks read per document asked for, at first; then four times deeper


def grouped(query: Query, run: Callable[[Query], SearchResult], reachable: int) -> SearchResult:
    """``run`` (the search itself) asked deep enough for ``query.k`` documents, grouped."""
    k = query.k
    depth = min(max(k * DEPTH, k), max(reachable, 1))
    while True:
        result = run(replace(query, k=depth, group=None))
        firsts: dict[str, int] = {}
        counts: dict[str, int] = {}
        for i, hit in enumerate(result.hits):
            counts[hit.source_uri] = counts.get(hit.source_uri, 0) + 1
            firsts.setdefault(hit.source_uri, i)
        if len(firsts) >= k or len(result.hits) < depth or depth >= reachable:
            break
        depth = min(depth * DEPTH, reachable)
    picked = sorted(firsts.values())[:k]
    hits = [
        replace(result.hits[i], rank=n, more=counts[result.hits[i].source_uri] - 1)
        for n, i in enumerate(picked, 1)
    ]
    note = f"grouped by document: {len(hits)} documents from the best {len(result.hits)} chunks"
    return replace(
        result,
        hits=hits,
        k_requested=k,
        note=f"{result.note}; {note}" if result.note else note,
    )
