"""The search verbs: vector queries (search, search-ann, search-graph, search-space) and text
queries (search-text, ask, retrieve). Each opens the file, calls one method, prints."""

from __future__ import annotations

import json
from pathlib import Path

import click

from urna.cli import render
from urna.cli.common import (
    file_argument,
    file_command,
    filter_options,
    fusion_option,
    json_option,
    k_option,
    mode_option,
    model_path_option,
    open_corpus,
    out,
    print_result,
)
from urna.search.query import parse_vector
from urna.search.result import SearchResult


@file_command()
@file_argument
@click.argument("query")
@k_option
@filter_options
@json_option
def search(
    file: str, query: str, k: int, source: str | None, section: str | None, as_json: bool
) -> None:
    """Exact cosine search with a query vector given as a JSON array."""
    with open_corpus(file) as corpus:
        vector = parse_vector(query)
        print_result(corpus.search(vector, k=k, source=source, section=section), as_json)


@file_command("search-ann")
@file_argument
@click.argument("query")
@k_option
@click.option("--ef", type=int, default=100, show_default=True, help="HNSW candidates to rerank.")
@filter_options
@json_option
def search_ann(
    file: str,
    query: str,
    k: int,
    ef: int,
    source: str | None,
    section: str | None,
    as_json: bool,
) -> None:
    """HNSW candidates reranked by exact cosine (exact without HNSW, or with a filter)."""
    with open_corpus(file) as corpus:
        vector = parse_vector(query)
        result = corpus.search_ann(vector, k=k, ef=ef, source=source, section=section)
        print_result(result, as_json)


@file_command("search-graph")
@file_argument
@click.argument("query")
@k_option
@click.option("--hops", type=int, default=1, show_default=True, help="Graph steps from the seeds.")
@click.option("--ef", type=int, default=100, show_default=True, help="Seed count: exact top ef.")
@filter_options
@json_option
def search_graph(
    file: str,
    query: str,
    k: int,
    hops: int,
    ef: int,
    source: str | None,
    section: str | None,
    as_json: bool,
) -> None:
    """Seeds from exact, expanded over the chunk graph, reranked (exact without a graph)."""
    with open_corpus(file) as corpus:
        vector = parse_vector(query)
        result = corpus.search_graph(vector, k=k, hops=hops, ef=ef, source=source, section=section)
        print_result(result, as_json)


@file_command("search-space")
@file_argument
@click.argument("query")
@click.option("--space", required=True, help="Name of the embedding space.")
@k_option
@click.option("--expect-model-hash", default=None, help="Refuse unless the space has this hash.")
@json_option
def search_space(
    file: str, query: str, space: str, k: int, expect_model_hash: str | None, as_json: bool
) -> None:
    """Exact search over one named embedding space (never a fallback)."""
    with open_corpus(file) as corpus:
        result = corpus.search_space(
            parse_vector(query), space, k=k, expect_model_hash=expect_model_hash
        )
        print_result(result, as_json)


@file_command("search-text")
@file_argument
@click.argument("text")
@k_option
@mode_option
@fusion_option
@click.option(
    "--candidates",
    type=int,
    default=None,
    help="Candidates per method before fusion (default max(4k, 64)).",
)
@model_path_option
@filter_options
@json_option
def search_text(
    file: str,
    text: str,
    k: int,
    mode: str,
    fusion: str | None,
    candidates: int | None,
    model_path: Path | None,
    source: str | None,
    section: str | None,
    as_json: bool,
) -> None:
    """Search by text: BM25, the file's own model (after the model gate), or both fused."""
    result = _text(file, text, k, mode, fusion, model_path, source, section, candidates)
    print_result(result, as_json)


@file_command()
@file_argument
@click.argument("text")
@k_option
@mode_option
@fusion_option
@click.option(
    "--disclose",
    type=click.Choice(["answer", "explain"]),
    default="answer",
    show_default=True,
    help="explain: also show the route and candidate counts.",
)
@model_path_option
@filter_options
def ask(
    file: str,
    text: str,
    k: int,
    mode: str,
    fusion: str | None,
    disclose: str,
    model_path: Path | None,
    source: str | None,
    section: str | None,
) -> None:
    """The passages that answer a question, each with its citation."""
    result = _text(file, text, k, mode, fusion, model_path, source, section)
    out(render.ask(result, explain=disclose == "explain"))


@file_command()
@file_argument
@click.argument("text")
@k_option
@mode_option
@fusion_option
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "json"]), default="jsonl", show_default=True
)
@model_path_option
@filter_options
def retrieve(
    file: str,
    text: str,
    k: int,
    mode: str,
    fusion: str | None,
    fmt: str,
    model_path: Path | None,
    source: str | None,
    section: str | None,
) -> None:
    """Hits as JSON for programs: one object per hit (jsonl) or one array (json), each in the
    same shape as a hit of search-text --json."""
    result = _text(file, text, k, mode, fusion, model_path, source, section)
    records = [h.to_dict() for h in result.hits]
    if fmt == "json":
        out(json.dumps(records, ensure_ascii=False, indent=2))
    else:
        out("\n".join(json.dumps(r, ensure_ascii=False) for r in records))


def _text(
    file: str,
    text: str,
    k: int,
    mode: str,
    fusion: str | None,
    model_path: Path | None,
    source: str | None,
    section: str | None,
    candidates: int | None = None,
) -> SearchResult:
    """One text query, as every text verb runs it (the file is closed after)."""
    with open_corpus(file) as corpus:
        return corpus.search_text(
            text,
            k=k,
            mode=mode,
            fusion=fusion,
            candidates=candidates,
            model_path=model_path,
            source=source,
            section=section,
        )


COMMANDS = (ask, retrieve, search_text, search, search_ann, search_graph, search_space)
