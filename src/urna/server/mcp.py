"""The MCP server for agents, on the official ``mcp`` SDK: ``urna mcp`` over stdio, and the
same tools at ``/mcp`` on ``urna serve`` (streamable HTTP, behind the server's token).

Tools: ``search`` (hits in the one wire shape, with citations and snippets), ``cite``
(a citation's text and span, optionally checked against its source), ``read`` (a chunk with
its neighbours in its source) and ``list_corpora``. A failure is an MCP tool error whose text
is the CLI's ``Error: ...`` line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import anyio
from pydantic import Field

from urna.errors import CitationError, ForeignCitationError, UrnaError
from urna.format.chunks import Chunk
from urna.index.languages import PATTERN as LANGUAGE
from urna.search.neighbours import MAX_NEIGHBOURS, neighbours
from urna.search.protocol import Searchable
from urna.search.request import Query, query_from
from urna.search.result import chunk_record
from urna.search.several import Several
from urna.server.databases import Databases, database_record
from urna.server.search import MAX_LIMIT, MAX_QUERY_CHARS
from urna.version import __version__

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

T = TypeVar("T")

INSTRUCTIONS = (
    "urna searches local document collections (corpora) and answers with passages that carry "
    "a citation urna://<content_hash>/<chunk_id>. Call search first; quote the passages you "
    "use with their citation; call read for the text around a passage, cite to show or check "
    "one. list_corpora names the corpora when more than one is served."
)

SEARCH = (
    "Search a corpus of documents by meaning and by words. Returns the best passages (hits), "
    "each with its text, a snippet around the query's words, its source file and section path, "
    "its exact byte span in the source, per-method ranks, and a citation_id to quote. "
    'Write the query as a question or keywords; "a phrase" must appear as written, -word '
    "must not appear, +word must, field:value (or field:>=2020, field:[a TO b]) filters. "
    "mode: auto (default, both methods when the "
    "corpus allows), hybrid, vector (paraphrase, meaning) or text (exact words, names, "
    "identifiers). Narrow with source (a glob on the source path, e.g. 'docs/*.md') or "
    "section (a section path prefix, e.g. 'Guide / Install'), or where (a filter on the "
    'metadata fields list_corpora shows, e.g. {"year": {"$gte": 2020}}).'
)
GROUP = (
    "document: one hit per document (its best passage), limit documents deep, each saying "
    "how many more of its passages matched"
)
FACETS = (
    "Fields whose values to count among what matched (metadata fields, or folder, source, "
    "section): the answer's facets say how many chunks hold each value"
)
CORPORA = (
    "Several corpora searched as one (the same model): one ranking, each hit naming its "
    "corpus; in place of corpus"
)
TYPOS = "Read a word the corpus does not hold as its nearest word (false: as typed)"
VECTOR_INDEX = "Hybrid's vector side: exact (every chunk) or ann (HNSW walks, approximate)"
LANG = "The query's language (de, fr, ...) for a corpus built with lang auto; else detected"
AT = "A collection's earlier version: a version hash prefix or an ISO time"
WHERE = (
    "A where-filter on metadata, Chroma's syntax: {field: value} or {field: {op: value}} with "
    "$eq $ne $gt $gte $lt $lte $in $nin $contains $exists, combined by $and $or $not"
)
CITE = (
    "Resolve a citation urna://<content_hash>/<chunk_id> (from a search hit) to its exact "
    "text, source file and byte span. With verify_source, also re-read the source file and "
    "check that the cited bytes still match the stored text: under the folders the build "
    "recorded, or under source_root where the sources have moved."
)
SOURCE_ROOT = (
    "With verify_source: the folder the sources now lie in, where they have moved since the "
    "build (an absolute path on the server's machine)"
)
READ = (
    "Read a cited passage with its neighbours: the chunks just before and after it in the "
    "same source document, for the context a single passage lacks."
)
LIST = "List the corpora this server answers for: name, chunk count, embedding model, hashes."

CorpusName = Annotated[
    str | None,
    Field(description="Corpus to use (list_corpora names them); optional when only one."),
]
CitationArg = Annotated[
    str, Field(description="A citation_id from a search hit: urna://<content_hash>/<chunk_id>")
]


class Tools:
    """The tools' bodies over the served corpora; each raises ``UrnaError`` on bad input."""

    def __init__(self, dbs: Databases) -> None:
        self.dbs = dbs

    def corpus(self, name: str | None) -> tuple[str, Searchable]:
        names = self.dbs.names()
        if name is None:
            if len(names) == 1:
                name = names[0]
            elif not names:
                raise UrnaError("no corpus is served")
            else:
                raise UrnaError(f"several corpora are served ({', '.join(names)}): name one")
        corpus = self.dbs.get(name)
        if corpus is None:
            raise UrnaError(f"corpus not found: {name} (served: {', '.join(names) or 'none'})")
        return name, corpus

    def resolve(self, citation: str, name: str | None) -> tuple[str, Searchable, Chunk]:
        """The corpus holding ``citation`` (the named one, or the one whose hash it names)."""
        if name is not None or len(self.dbs.names()) <= 1:
            found, corpus = self.corpus(name)
            return found, corpus, corpus.cite(citation)
        first: CitationError | None = None
        for candidate in self.dbs.names():
            held = self.dbs.get(candidate)
            if held is None:
                continue
            try:
                return candidate, held, held.cite(citation)
            except ForeignCitationError as exc:  # another corpus may hold it
                first = first or exc
        raise CitationError(f"no served corpus holds {citation}") from first

    def search(self, corpus: str | None, query: Query, at: str | None = None) -> dict[str, Any]:
        if not (query.text or "").strip():
            raise UrnaError("the query is empty")
        names = [n for n in (corpus or "").split(",") if n]
        if len(names) > 1:  # several corpora as one: each hit names its own
            if at:
                raise UrnaError("at applies to one corpus, not several")
            with Several({n: self.corpus(n)[1] for n in names}) as several:
                return {"corpora": names, **several.run(query).to_dict()}
        name, searchable = self.corpus(corpus)
        if at:
            searchable = self.dbs.at(name, at)
        return {"corpus": name, **searchable.run(query).to_dict()}

    def cite(
        self, citation: str, corpus: str | None, verify_source: bool, source_root: str | None
    ) -> dict[str, Any]:
        name, searchable, chunk = self.resolve(citation, corpus)
        out = {"corpus": name, **_record(searchable, chunk)}
        if verify_source:
            path = searchable.verify_source(chunk, source_root or None)
            out["source_check"] = f"ok: the bytes of {path} match the stored text"
        return out

    def read(self, citation: str, corpus: str | None, before: int, after: int) -> dict[str, Any]:
        name, searchable, chunk = self.resolve(citation, corpus)
        passage = neighbours(searchable, chunk, before=before, after=after)
        return {
            "corpus": name,
            "chunk": _record(searchable, passage.chunk),
            "before": [_record(searchable, c) for c in passage.before],
            "after": [_record(searchable, c) for c in passage.after],
        }

    def list_corpora(self) -> dict[str, Any]:
        out = []
        for name in self.dbs.names():
            corpus = self.dbs.get(name)
            if corpus is not None:
                out.append(database_record(name, corpus))
        return {"corpora": out}


def _record(corpus: Searchable, chunk: Chunk) -> dict[str, Any]:
    return chunk_record(chunk, file_hash=corpus.file_hash, content_hash=corpus.content_hash)


async def _run(fn: Callable[[], T], public: Callable[[str], str]) -> T:
    """A tool body off the event loop; its ``UrnaError`` becomes the tool's error, its paths
    relative to what is served (``Databases.public``)."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return await anyio.to_thread.run_sync(fn)
    except UrnaError as exc:
        raise ToolError(public(str(exc))) from None


def _server_class(base: type[MCPServer]) -> type[MCPServer]:
    """The SDK's server, with an unknown prompt answered as a JSON-RPC invalid-params error
    (the SDK raises a plain ValueError there: a traceback on stderr and error code 0)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    class Server(base):  # type: ignore[misc,valid-type]
        async def get_prompt(self, name: str, *args: Any, **kwargs: Any) -> Any:
            if name not in {p.name for p in await self.list_prompts()}:
                raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}")
            return await super().get_prompt(name, *args, **kwargs)

    return Server


async def run_stdio(server: MCPServer) -> None:
    """The SDK's stdio transport, with the parse error JSON-RPC asks for: the transport passes
    a line it cannot parse on as an exception, which the server drops unanswered; here it
    is answered with -32700 (id null) and the connection goes on."""
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp_types import PARSE_ERROR, ErrorData, JSONRPCError

    lowlevel = server._lowlevel_server  # what the SDK's own run_stdio_async runs
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def forward() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        error = ErrorData(code=PARSE_ERROR, message="Parse error: not JSON-RPC")
                        reply = JSONRPCError(jsonrpc="2.0", id=None, error=error)
                        await write_stream.send(SessionMessage(reply))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(forward)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())
            group.cancel_scope.cancel()


def create_mcp(dbs: Databases) -> MCPServer:
    """The MCP server over ``dbs`` (its tools read the served corpora as they are then)."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.types import ToolAnnotations
    except ImportError:
        raise UrnaError("the MCP server needs its extra: pip install 'urna[mcp]'") from None
    tools = Tools(dbs)
    server: MCPServer = _server_class(MCPServer)(
        "urna", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    readonly = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(description=SEARCH, annotations=readonly)
    async def search(
        query: Annotated[str, Field(max_length=MAX_QUERY_CHARS)],
        corpus: CorpusName = None,
        mode: Literal["auto", "hybrid", "vector", "text"] = "auto",
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Hits to return")] = 10,
        source: Annotated[str | None, Field(max_length=500)] = None,
        section: Annotated[str | None, Field(max_length=500)] = None,
        where: Annotated[dict[str, Any] | None, Field(description=WHERE)] = None,
        at: Annotated[str | None, Field(max_length=100, description=AT)] = None,
        group: Annotated[Literal["document"] | None, Field(description=GROUP)] = None,
        facets: Annotated[list[str] | None, Field(max_length=16, description=FACETS)] = None,
        typos: Annotated[bool, Field(description=TYPOS)] = True,
        lang: Annotated[str | None, Field(pattern=LANGUAGE, description=LANG)] = None,
        vector_index: Annotated[Literal["exact", "ann"], Field(description=VECTOR_INDEX)] = "exact",
        corpora: Annotated[list[str] | None, Field(max_length=16, description=CORPORA)] = None,
    ) -> dict[str, Any]:
        # The MCP schema of a query, declared once here; the core takes it whole.
        asked = query_from(
            text=query,
            k=limit,
            mode=mode,
            group=group,
            facets=tuple(facets or ()),
            typos=typos,
            lang=lang,
            vector_index=vector_index,
            source=source or None,
            section=section or None,
            where=where,
        )
        named = ",".join(corpora) if corpora else corpus
        return await _run(lambda: tools.search(named, asked, at or None), dbs.public)

    @server.tool(description=CITE, annotations=readonly)
    async def cite(
        citation: CitationArg,
        corpus: CorpusName = None,
        verify_source: bool = False,
        source_root: Annotated[str | None, Field(max_length=4096, description=SOURCE_ROOT)] = None,
    ) -> dict[str, Any]:
        return await _run(
            lambda: tools.cite(citation, corpus, verify_source, source_root), dbs.public
        )

    @server.tool(description=READ, annotations=readonly)
    async def read(
        citation: CitationArg,
        corpus: CorpusName = None,
        before: Annotated[int, Field(ge=0, le=MAX_NEIGHBOURS)] = 1,
        after: Annotated[int, Field(ge=0, le=MAX_NEIGHBOURS)] = 1,
    ) -> dict[str, Any]:
        return await _run(lambda: tools.read(citation, corpus, before, after), dbs.public)

    @server.tool(description=LIST, annotations=readonly)
    async def list_corpora() -> dict[str, Any]:
        return await _run(tools.list_corpora, dbs.public)

    return server
