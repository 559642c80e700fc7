"""The product's own API under /v1: search with modes and filters, citations, databases, and
the overview the search page opens on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from urna.format.regular import read_regular
from urna.ingest.loaders import kind_of
from urna.search.collection import Collection
from urna.search.neighbours import MAX_NEIGHBOURS, neighbours
from urna.search.overview import overview
from urna.search.protocol import Searchable
from urna.search.request import query_from
from urna.search.result import chunk_record
from urna.search.several import Several
from urna.search.strength import strong_count
from urna.server.databases import Databases, database_record
from urna.server.errors import ERROR_RESPONSES, GUARDED_RESPONSES, ApiError
from urna.server.params import SearchBody, SearchParams

CorpusOf = Callable[[str], Searchable]


def router(dbs: Databases) -> APIRouter:
    api = APIRouter(prefix="/v1")

    def corpus_of(name: str) -> Searchable:
        corpus = dbs.get(name)
        if corpus is None:
            raise ApiError(404, "unknown_database", f"database not found: {name}")
        return corpus

    _search_routes(api, dbs, corpus_of)
    _citation_routes(api, corpus_of)
    _source_route(api, corpus_of)
    _database_routes(api, dbs, corpus_of)
    return api


def _search_routes(api: APIRouter, dbs: Databases, corpus_of: CorpusOf) -> None:
    def answer(params: SearchParams) -> dict[str, Any]:
        if not params.q.strip():
            raise ApiError(400, "bad_query", "q is empty")
        names = [n for n in params.db.split(",") if n]
        if len(names) > 1 and params.at:
            raise ApiError(400, "bad_query", "at applies to one database, not several")
        asked = query_from(
            text=params.q,
            k=params.limit,
            mode=params.mode,
            fusion=params.fusion,
            group=params.group,
            facets=params.facets,
            typos=params.typos,
            lang=params.lang,
            vector_index=params.vector_index,
            source=params.source or None,
            section=params.section or None,
            where=params.where,
        )
        if len(names) > 1:  # one search core over their shards, made for this request
            with Several({n: corpus_of(n) for n in names}) as several:
                result = several.run(asked)
            return {"db": params.db, "strong": strong_count(result.hits), **result.to_dict()}
        corpus = corpus_of(params.db)
        if params.at:
            corpus = dbs.at(params.db, params.at)
        version = {"version": corpus.version} if isinstance(corpus, Collection) else {}
        result = corpus.run(asked)
        # ``strong``: how many leading hits are strong matches (search/strength.py)
        return {"db": params.db, **version, "strong": strong_count(result.hits), **result.to_dict()}

    @api.get("/search", summary="Search one database by text", responses=ERROR_RESPONSES)
    async def search(params: Annotated[SearchParams, Query()]) -> dict[str, Any]:
        return await asyncio.to_thread(answer, params)

    @api.post(
        "/search",
        summary="The same search, its parameters as a JSON body",
        responses=ERROR_RESPONSES,
    )
    async def search_post(params: SearchBody) -> dict[str, Any]:
        return await asyncio.to_thread(answer, params)


def _citation_routes(api: APIRouter, corpus_of: CorpusOf) -> None:
    @api.get(
        "/cite",
        summary="Resolve a citation urna://<content_hash>/<chunk_id>",
        responses=ERROR_RESPONSES,
    )
    async def cite(
        db: str = Query(..., min_length=1), citation: str = Query(..., min_length=1, max_length=300)
    ) -> dict[str, Any]:
        corpus = corpus_of(db)
        chunk = await asyncio.to_thread(corpus.cite, citation)
        return chunk_record(chunk, file_hash=corpus.file_hash, content_hash=corpus.content_hash)

    @api.get(
        "/read",
        summary="A cited chunk with its neighbours in its source",
        responses=ERROR_RESPONSES,
    )
    async def read(
        db: str = Query(..., min_length=1),
        citation: str = Query(..., min_length=1, max_length=300),
        before: int = Query(1, ge=0, le=MAX_NEIGHBOURS),
        after: int = Query(1, ge=0, le=MAX_NEIGHBOURS),
    ) -> dict[str, Any]:
        corpus = corpus_of(db)

        def passage() -> dict[str, Any]:
            found = neighbours(corpus, corpus.cite(citation), before=before, after=after)
            fields = {"file_hash": corpus.file_hash, "content_hash": corpus.content_hash}
            return {
                "db": db,
                "chunk": chunk_record(found.chunk, **fields),
                "before": [chunk_record(c, **fields) for c in found.before],
                "after": [chunk_record(c, **fields) for c in found.after],
            }

        return await asyncio.to_thread(passage)


# How a source is served: as what it is, in a sandbox (a page's scripts never run with this
# origin, and nothing it names is fetched), never sniffed as something else.
SOURCE_TYPES = {
    "markdown": "text/plain; charset=utf-8",
    "text": "text/plain; charset=utf-8",
    "html": "text/html",
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "jsonl": "text/plain; charset=utf-8",
    "csv": "text/plain; charset=utf-8",
}
SOURCE_HEADERS = {
    "Content-Security-Policy": "sandbox; default-src 'none'; style-src 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
}
MAX_SOURCE = 64 << 20


def _source_route(api: APIRouter, corpus_of: CorpusOf) -> None:
    @api.get(
        "/source",
        summary="The cited source file's bytes, once the cited span is checked in it",
        response_class=Response,
        responses=ERROR_RESPONSES,
    )
    async def source(
        db: str = Query(..., min_length=1), citation: str = Query(..., min_length=1, max_length=300)
    ) -> Response:
        corpus = corpus_of(db)

        def read() -> tuple[bytes, str, str]:
            chunk = corpus.cite(citation)
            path = corpus.verify_source(chunk)  # the recorded roots only: never a client's
            try:
                data = read_regular(path, MAX_SOURCE)
            except OSError as exc:  # gone or replaced since the check
                raise ApiError(404, "citation", f"source not readable: {chunk.source_uri}") from exc
            if len(data) > MAX_SOURCE:
                raise ApiError(413, "too_large", f"the source is over {MAX_SOURCE} bytes")
            span = f"{chunk.byte_start}-{chunk.byte_end}"
            return data, SOURCE_TYPES.get(kind_of(path) or "", "application/octet-stream"), span

        data, media, span = await asyncio.to_thread(read)
        headers = {**SOURCE_HEADERS, "X-Urna-Span": span}
        return Response(data, media_type=media, headers=headers)


def _database_routes(api: APIRouter, dbs: Databases, corpus_of: CorpusOf) -> None:
    @api.get("/databases", summary="Loaded databases", responses=GUARDED_RESPONSES)
    async def databases() -> dict[str, Any]:
        out = []
        for name in dbs.names():
            c = dbs.get(name)
            if c is not None:
                out.append(database_record(name, c))
        return {"databases": out}

    @api.get(
        "/overview",
        summary="Each database at a glance: size, model, example queries",
        responses=GUARDED_RESPONSES,
    )
    async def overview_all() -> dict[str, Any]:
        def look() -> list[dict[str, Any]]:
            found = ((name, dbs.get(name)) for name in dbs.names())
            return [overview(name, c) for name, c in found if c is not None]

        return {"databases": await asyncio.to_thread(look)}

    @api.get(
        "/databases/{name}",
        summary="Everything urna inspect --json shows",
        responses=ERROR_RESPONSES,
    )
    async def database(name: str) -> dict[str, Any]:
        info = await asyncio.to_thread(corpus_of(name).info)
        info.pop("path", None)  # databases are addressed by name, never by path
        for shard in info.get("shards", []):
            shard.pop("path", None)
        return info
