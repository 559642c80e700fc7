"""The compatible routes (KuraDB's search API): /api/search, /api/keyword, /api/semantic,
/api/health, /api/list. Behaviour as README.md (HTTP API) describes the compatible contract."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request

from urna.errors import UrnaError
from urna.server.databases import Databases
from urna.server.errors import (
    ERROR_RESPONSES,
    GUARDED_RESPONSES,
    ApiError,
    code_of,
    error_body,
)
from urna.server.search import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    grouped,
    keyword_hits,
    semantic_hits,
)

TARGETS = ("keyword", "semantic")


def _query(name: str, description: str, schema: dict[str, Any], required: bool = False) -> Any:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema,
    }


# The handlers read the query string themselves (KuraDB's lenient rules: a bad limit falls
# back to 10); the schema below documents those parameters for clients and fuzzers.
_TEXT = {"type": "string", "minLength": 1, "pattern": r"\S"}  # blank means missing
_DB = _query("db", "Database name (a served file's stem).", _TEXT, True)
_Q = _query("q", f"Query text, at most {MAX_QUERY_CHARS} characters.", _TEXT, True)
_LIMIT = _query(
    "limit",
    f"Hits per branch, 1 to {MAX_LIMIT}; anything else means 10.",
    {"type": "string"},
)
_TARGET = _query("target", "One branch only.", {"type": "string", "enum": list(TARGETS)})


def _documented(*params: Any) -> dict[str, Any]:
    return {"openapi_extra": {"parameters": list(params)}, "responses": ERROR_RESPONSES}


def parse_limit(raw: str | None) -> int:
    """Absent, non-numeric, non-positive or over 100 falls back to 10."""
    try:
        value = int(raw) if raw is not None else 10
    except ValueError:
        return 10
    return value if 1 <= value <= MAX_LIMIT else 10


def router(dbs: Databases) -> APIRouter:
    api = APIRouter()

    async def handle(request: Request, fixed: str | None) -> dict[str, Any]:
        params = request.query_params
        db, q = params.get("db"), params.get("q")
        if not db:
            raise ApiError(400, "missing_parameter", "db is required")
        if q is None or not q.strip():
            raise ApiError(400, "missing_parameter", "q is required")
        if len(q) > MAX_QUERY_CHARS:
            raise ApiError(
                413,
                "query_too_long",
                f"q has {len(q)} characters, at most {MAX_QUERY_CHARS} are accepted",
            )
        corpus = dbs.get(db)
        if corpus is None:
            raise ApiError(404, "unknown_database", f"database not found: {db}")
        target = fixed
        if target is None and params.get("target") is not None:
            target = params["target"].lower()
            if target not in TARGETS:
                raise ApiError(
                    400,
                    "invalid_target",
                    f"target must be keyword or semantic, got {params['target']!r}",
                )
        limit = parse_limit(params.get("limit"))
        branches = [target] if target else list(TARGETS)
        run = {"keyword": keyword_hits, "semantic": semantic_hits}

        async def branch(name: str) -> tuple[str, Any]:
            try:
                return name, await asyncio.to_thread(run[name], corpus, q, limit)
            except UrnaError as exc:
                return name, exc

        body: dict[str, Any] = {}
        errors = {}
        for name, result in await asyncio.gather(*(branch(b) for b in branches)):
            if isinstance(result, UrnaError):
                body[name] = []
                errors[name] = error_body(code_of(result)[1], str(result))["error"]
            else:
                body[name] = grouped(result)
        if errors:
            body["errors"] = errors
        return body

    @api.get(
        "/api/search",
        summary="Keyword and semantic search (KuraDB-compatible)",
        **_documented(_DB, _Q, _LIMIT, _TARGET),
    )
    async def search(request: Request) -> dict[str, Any]:
        return await handle(request, None)

    @api.get(
        "/api/keyword",
        summary="The same handler with target=keyword",
        **_documented(_DB, _Q, _LIMIT),
    )
    async def keyword(request: Request) -> dict[str, Any]:
        return await handle(request, "keyword")

    @api.get(
        "/api/semantic",
        summary="The same handler with target=semantic",
        **_documented(_DB, _Q, _LIMIT),
    )
    async def semantic(request: Request) -> dict[str, Any]:
        return await handle(request, "semantic")

    @api.get("/api/health", summary="Liveness (no token needed)")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "databases": len(dbs.names())}

    @api.get("/api/list", summary="Loaded databases", responses=GUARDED_RESPONSES)
    async def listing() -> dict[str, Any]:
        return {"databases": dbs.names()}

    return api
