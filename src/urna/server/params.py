"""The HTTP schema of a search (``/v1/search``), declared once for both of its forms: query
parameters (GET; ``where`` as JSON text) and a JSON body (POST; ``where`` as an object)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from urna.format.fusion import Fusion
from urna.index.languages import PATTERN as LANGUAGE
from urna.search.request import Group, Mode
from urna.server.search import MAX_LIMIT, MAX_QUERY_CHARS

WHERE_HELP = 'a where-filter on metadata, e.g. {"year": {"$gte": 2020}}'


class SearchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    db: str = Field(..., min_length=1)
    q: str = Field(..., min_length=1, max_length=MAX_QUERY_CHARS)
    mode: Mode = "auto"
    limit: int = Field(10, ge=1, le=MAX_LIMIT)
    fusion: Fusion | None = None
    facets: str | None = Field(
        None, max_length=500, description="fields to count values of, comma-separated"
    )
    typos: bool = Field(True, description="read a word the corpus lacks as its nearest word")
    vector_index: Literal["exact", "ann"] = Field(
        "exact", description="hybrid's vector side: every chunk (exact) or HNSW walks (ann)"
    )
    lang: str | None = Field(
        None, pattern=LANGUAGE, description="the query's language (a corpus built with lang auto)"
    )
    group: Group | None = Field(
        None, description="document: the best chunk of each of limit documents, with `more`"
    )
    source: str | None = Field(None, max_length=500, description="a path pattern (.gitignore)")
    section: str | None = Field(None, max_length=500, description="section path prefix")
    # A URL must fit the server's request line (h11: 16 KiB, all parameters at their most,
    # percent-encoded): a longer filter goes in a POST body.
    where: str | None = Field(None, max_length=2000, description=f"{WHERE_HELP}, as JSON")
    at: str | None = Field(
        None, max_length=100, description="a collection's earlier version: hash prefix or ISO time"
    )


class SearchBody(SearchParams):
    where: dict[str, Any] | None = Field(None, description=WHERE_HELP)  # type: ignore[assignment]
