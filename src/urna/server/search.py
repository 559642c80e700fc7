"""What both HTTP surfaces run: the library's search, grouped or filtered for the wire."""

from __future__ import annotations

import fnmatch
from typing import Any

from urna.cli.render import hit_record
from urna.corpus import Corpus
from urna.search.result import Hit, SearchResult

SEMANTIC_FLOOR = 0.3  # semantic hits below this cosine are dropped (the compatible contract)
MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100


def keyword_hits(corpus: Corpus, q: str, limit: int) -> list[Hit]:
    if corpus.bm25 is None:
        return []
    return corpus.search_text(q, k=limit, mode="text").hits


def semantic_hits(corpus: Corpus, q: str, limit: int) -> list[Hit]:
    hits = corpus.search_text(q, k=limit, mode="vector").hits
    return [h for h in hits if h.score >= SEMANTIC_FLOOR]


def grouped(hits: list[Hit]) -> list[dict[str, Any]]:
    """One group per source, in order of each group's best hit; matches keep hit order."""
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


def v1_hits(result: SearchResult) -> list[dict[str, Any]]:
    out = []
    for h in result.hits:
        record = hit_record(h)
        record["rank"] = h.rank
        record["section_path"] = h.section_path
        record["snippet"] = h.snippet
        record["source_ordinal"] = h.source_ordinal
        out.append(record)
    return out


def filtered_search(
    corpus: Corpus,
    q: str,
    *,
    mode: str,
    limit: int,
    source: str | None,
    section: str | None,
    fusion: str | None,
) -> SearchResult:
    """search_text, then the source glob and section-path prefix filters (over a deeper list)."""
    if not source and not section:
        return corpus.search_text(q, k=limit, mode=mode, fusion=fusion)
    depth = min(corpus.n_chunks, max(limit * 20, 200))
    result = corpus.search_text(q, k=depth, mode=mode, fusion=fusion)
    keep = [
        h
        for h in result.hits
        if (not source or fnmatch.fnmatch(h.source_uri, source))
        and (not section or h.section_path.startswith(section))
    ][:limit]
    result.hits[:] = [_reranked(h, i) for i, h in enumerate(keep, 1)]
    return result


def _reranked(hit: Hit, rank: int) -> Hit:
    from dataclasses import replace

    return replace(hit, rank=rank)
