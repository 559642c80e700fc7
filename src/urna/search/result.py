"""What a search returns: hits with their citations, and the result header."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

RECALL_EXACT = "1"
RECALL_RERANKED = "(not computed; rerank guarantees real cosine)"


@dataclass(frozen=True)
class Hit:
    """One scored chunk, with everything needed to cite and check it."""

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SearchResult:
    index_type: str
    recall: str
    k_requested: int
    n_chunks: int
    query_time_ms: float
    hits: list[Hit] = field(default_factory=list)
    mode: str | None = None
    candidates: dict[str, int] = field(default_factory=dict)
    note: str = ""
    space: str | None = None

    @property
    def k_returned(self) -> int:
        return len(self.hits)

    @property
    def truncated(self) -> bool:
        return self.k_requested < self.n_chunks

    def to_dict(self) -> dict[str, Any]:
        return {
            **({"space": self.space} if self.space else {}),
            "index_type": self.index_type,
            **({"mode": self.mode} if self.mode else {}),
            "recall": 1 if self.recall == RECALL_EXACT else None,
            "recall_note": None if self.recall == RECALL_EXACT else self.recall,
            "truncated": self.truncated,
            "k_requested": self.k_requested,
            "k_returned": self.k_returned,
            "query_time_ms": round(self.query_time_ms, 3),
            **({"note": self.note} if self.note else {}),
            "hits": [h.to_dict() for h in self.hits],
        }
