"""What a search returns, and its one wire shape.

``Hit.to_dict`` and ``SearchResult.to_dict`` are the JSON every shell prints or serves
(`search --json`, `search-text --json`, `retrieve`, `/v1/search`, and `chunk_record` for
`/v1/cite`): one key name per field, defined here once. The KuraDB-compatible routes keep
their own contract (``server/compat.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

RERANK_NOTE = "(not computed; rerank guarantees real cosine)"
FUSED_NOTE = "(not computed; fused ranking)"


@dataclass(frozen=True)
class Hit:
    """One scored chunk, with everything needed to cite and check it.

    ``ordinal`` is the chunk's position in the file (0-based, the tie-break order);
    ``source_ordinal`` its 1-based position within its source (0 when the file does not say).
    """

    rank: int
    ordinal: int
    chunk_id: str
    score: float
    score_type: str
    source_uri: str
    byte_start: int
    byte_end: int
    text: str
    model: str
    index_type: str
    reranked: bool
    file_hash: str
    content_hash: str
    citation_id: str
    section_path: str = ""
    page: int = 0
    source_ordinal: int = 0
    ranks: dict[str, dict[str, float]] = field(default_factory=dict)
    snippet: str = ""
    precision: str = ""  # which stored precision scored the hit, on reranked paths
    metadata: dict[str, Any] = field(default_factory=dict)  # the chunk's stored fields
    more: int | None = None  # grouped by document: its other chunks that matched
    corpus: str | None = None  # several corpora searched as one: the hit's
    highlights: list[list[int]] | None = None  # a text query's matched words, bytes of text

    def to_dict(self) -> dict[str, Any]:
        """The hit's wire shape: every field, always, in this order."""
        return {
            "rank": self.rank,
            "score": self.score,
            "score_type": self.score_type,
            "ranks": self.ranks,
            **chunk_record(self, file_hash=self.file_hash, content_hash=self.content_hash),
            "metadata": self.metadata,
            "snippet": self.snippet,
            "highlights": self.highlights or [],
            "model": self.model,
            "index_type": self.index_type,
            "reranked": self.reranked,
            "precision": self.precision,
            **({"more": self.more} if self.more is not None else {}),
            **({"corpus": self.corpus} if self.corpus is not None else {}),
        }


@dataclass(frozen=True)
class SearchResult:
    """A ranked answer. ``recall`` is 1.0 on exact paths and None where it is not computed
    (``recall_note`` says why); ``n_searched`` counts the chunks the query could reach
    (every chunk, or those a filter keeps)."""

    index_type: str
    recall: float | None
    k_requested: int
    n_searched: int
    query_time_ms: float
    hits: list[Hit] = field(default_factory=list)
    mode: str | None = None
    candidates: dict[str, int] = field(default_factory=dict)
    note: str = ""
    space: str | None = None
    recall_note: str | None = None
    terms: list[str] = field(default_factory=list)  # the text query's terms, as BM25 reads them
    facets: dict[str, Any] | None = None  # value counts among what matched (``facets.py``)

    @property
    def k_returned(self) -> int:
        return len(self.hits)

    @property
    def truncated(self) -> bool:
        return self.k_requested < self.n_searched

    def to_dict(self) -> dict[str, Any]:
        """The result's wire shape: the header, then every hit's."""
        return {
            **({"space": self.space} if self.space else {}),
            "index_type": self.index_type,
            **({"mode": self.mode} if self.mode else {}),
            "recall": self.recall,
            "recall_note": self.recall_note,
            "truncated": self.truncated,
            "k_requested": self.k_requested,
            "k_returned": self.k_returned,
            "query_time_ms": round(self.query_time_ms, 3),
            **({"candidates": self.candidates} if self.candidates else {}),
            **({"note": self.note} if self.note else {}),
            "terms": self.terms,
            **({"facets": self.facets} if self.facets is not None else {}),
            "hits": [h.to_dict() for h in self.hits],
        }


class ChunkFields(Protocol):
    @property
    def chunk_id(self) -> str: ...

    @property
    def citation_id(self) -> str: ...

    @property
    def source_uri(self) -> str: ...

    @property
    def byte_start(self) -> int: ...

    @property
    def byte_end(self) -> int: ...

    @property
    def section_path(self) -> str: ...

    @property
    def page(self) -> int: ...

    @property
    def source_ordinal(self) -> int: ...

    @property
    def ordinal(self) -> int: ...

    @property
    def text(self) -> str: ...


def chunk_record(chunk: ChunkFields, *, file_hash: str, content_hash: str) -> dict[str, Any]:
    """A stored chunk's fields on the wire (a hit's, and a resolved citation's)."""
    return {
        "chunk_id": chunk.chunk_id,
        "citation_id": chunk.citation_id,
        "source_uri": chunk.source_uri,
        "byte_start": chunk.byte_start,
        "byte_end": chunk.byte_end,
        "section_path": chunk.section_path,
        "page": chunk.page,
        "source_ordinal": chunk.source_ordinal,
        "ordinal": chunk.ordinal,
        "text": chunk.text,
        "file_hash": file_hash,
        "content_hash": content_hash,
    }
