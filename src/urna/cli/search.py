"""The search verbs: vector queries (search, search-ann, search-graph, search-space) and text
queries (search-text, ask, retrieve). Each opens the file, runs one ``Query``, prints."""

from __future__ import annotations

import json
from typing import Any

import click

from urna.cli import render
from urna.cli.common import (
    FILTERS,
    file_argument,
    file_command,
    json_option,
    open_corpus,
    out,
    print_result,
    query_options,
)
from urna.search.query import parse_vector
from urna.search.request import query_from
from urna.search.result import SearchResult

TEXT_PARTS = (
    "k",
    "mode",
    "fusion",
    "model_path",
    "group",
    "facets",
    "typos",
    "lang",
    "vector_index",
    *FILTERS,
)


def _run(file: str, **parts: Any) -> SearchResult:
    """One query, as every verb runs it (the file is closed after)."""
    with open_corpus(file) as corpus:
        return corpus.run(query_from(**parts))


@file_command()
@file_argument
@click.argument("query")
@query_options("k", *FILTERS)
@json_option
def search(file: str, query: str, asked: dict[str, Any], as_json: bool) -> None:
    """Exact cosine search with a query vector given as a JSON array."""
    print_result(_run(file, vector=parse_vector(query), method="exact", **asked), as_json)


@file_command("search-ann")
@file_argument
@click.argument("query")
@query_options("k", "ef", *FILTERS)
@json_option
def search_ann(file: str, query: str, asked: dict[str, Any], as_json: bool) -> None:
    """HNSW candidates reranked by exact cosine (exact without HNSW, or with a filter)."""
    print_result(_run(file, vector=parse_vector(query), method="ann", **asked), as_json)


@file_command("search-graph")
@file_argument
@click.argument("query")
@query_options("k", "hops", "ef", *FILTERS)
@json_option
def search_graph(file: str, query: str, asked: dict[str, Any], as_json: bool) -> None:
    """Seeds from exact, expanded over the chunk graph, reranked (exact without a graph)."""
    print_result(_run(file, vector=parse_vector(query), method="graph", **asked), as_json)


@file_command("search-space")
@file_argument
@click.argument("query")
@query_options("space", "k", "expect_model_hash", *FILTERS)
@json_option
def search_space(file: str, query: str, asked: dict[str, Any], as_json: bool) -> None:
    """Exact search over one named embedding space (never a fallback)."""
    print_result(_run(file, vector=parse_vector(query), method="space", **asked), as_json)


@file_command("search-text")
@file_argument
@click.argument("text")
@query_options("k", "mode", "fusion", "candidates", "model_path", *FILTERS)
@json_option
def search_text(file: str, text: str, asked: dict[str, Any], as_json: bool) -> None:
    """Search by text: BM25, the file's own model (after the model gate), or both fused."""
    print_result(_run(file, text=text, **asked), as_json)


@file_command()
@file_argument
@click.argument("text")
@query_options(*TEXT_PARTS)
@click.option(
    "--disclose",
    type=click.Choice(["answer", "explain"]),
    default="answer",
    show_default=True,
    help="explain: also show the route and candidate counts.",
)
def ask(file: str, text: str, asked: dict[str, Any], disclose: str) -> None:
    """The passages that answer a question, each with its citation."""
    out(render.ask(_run(file, text=text, **asked), explain=disclose == "explain"))


@file_command()
@file_argument
@click.argument("text")
@query_options(*TEXT_PARTS)
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "json"]), default="jsonl", show_default=True
)
def retrieve(file: str, text: str, asked: dict[str, Any], fmt: str) -> None:
    """Hits as JSON for programs: one object per hit (jsonl) or one array (json), each in the
    same shape as a hit of search-text --json."""
    records = [h.to_dict() for h in _run(file, text=text, **asked).hits]
    if fmt == "json":
        out(json.dumps(records, ensure_ascii=False, indent=2))
    else:
        out("\n".join(json.dumps(r, ensure_ascii=False) for r in records))


COMMANDS = (ask, retrieve, search_text, search, search_ann, search_graph, search_space)
