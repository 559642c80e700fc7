"""What urna's framework retrievers share: their settings, the corpus they open, and the
metadata a hit carries into a framework's document or node."""

from __future__ import annotations

from typing import Any

from urna import library
from urna.errors import QueryError
from urna.search.opening import open_path
from urna.search.protocol import Searchable
from urna.search.result import Hit
from urna.search.text import MODES

SETTINGS = ("k", "mode", "fusion", "source", "section", "where")  # the Query parts they set


def check_settings(path: str | None, corpus_name: str | None, k: int, mode: str) -> None:
    if (path is None) == (corpus_name is None):
        raise ValueError("give exactly one of path (a .urna file or folder) or corpus_name")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


def open_target(path: str | None, corpus_name: str | None) -> Searchable:
    """The file or collection at ``path``, or the library's corpus ``corpus_name``."""
    return open_path(library.resolve(str(corpus_name)) if path is None else path)


def overridden(defaults: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    unknown = set(overrides) - set(SETTINGS)
    if unknown:
        raise QueryError(f"unknown retriever arguments: {', '.join(sorted(unknown))}")
    return defaults | overrides


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """Everything to cite and check a hit: the citation, source and span, section path,
    page, hashes, rank and scores (each method's on a fused hit), and its own metadata."""
    return {
        "citation_id": hit.citation_id,
        "source": hit.source_uri,
        "byte_start": hit.byte_start,
        "byte_end": hit.byte_end,
        "section_path": hit.section_path,
        "page": hit.page,
        "chunk_id": hit.chunk_id,
        "content_hash": hit.content_hash,
        "file_hash": hit.file_hash,
        "rank": hit.rank,
        "score": hit.score,
        "score_type": hit.score_type,
        "ranks": hit.ranks,
        "model": hit.model,
        "fields": hit.metadata,  # the chunk's own metadata (front matter, record fields)
    }
