"""The verbs around search: eval (quality on a BEIR folder), benchmark (latency), serve (HTTP)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from urna.cli import render
from urna.cli.common import (
    device_option,
    file_argument,
    file_command,
    k_option,
    library_paths,
    open_corpus,
    out,
    precision_option,
    served_paths,
)
from urna.evaluate.latency import run_benchmark
from urna.evaluate.run import run_eval


@click.command(name="eval")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--model", default="minilm", show_default=True, help="Embedding model to build with.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="Corpus file to build or reuse (default: in the cache folder).",
)
@click.option("--rebuild", is_flag=True, help="Build the corpus file even if it exists.")
@click.option("--split", default="test", show_default=True, help="Query split: test, train...")
@click.option(
    "--shards",
    type=click.IntRange(1, 1024),
    default=None,
    help="Build (or reuse) the corpus as a collection of this many shards.",
)
@click.option(
    "--queries",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Another query file (JSONL: _id, text) over the same corpus.",
)
@click.option(
    "--qrels",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Judgements for --queries (TSV: query-id, corpus-id, score; default: the split's).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--progress/--quiet", default=None, help="Stage lines on stderr.")
@precision_option
def eval_cmd(
    folder: Path,
    model: str,
    output: Path | None,
    rebuild: bool,
    split: str,
    shards: int | None,
    queries: Path | None,
    qrels: Path | None,
    as_json: bool,
    progress: bool | None,
) -> None:
    """Retrieval quality on a BEIR folder (corpus.jsonl, queries.jsonl, qrels.tsv), per mode."""
    show = sys.stderr.isatty() if progress is None else progress
    report = run_eval(
        folder,
        model=model,
        output=output,
        rebuild=rebuild,
        split=split,
        shards=shards,
        queries=queries,
        qrels=qrels,
        report=(lambda m: click.echo(m, err=True)) if show else (lambda m: None),
    )
    out(json.dumps(report.to_dict(), indent=2) if as_json else render.eval_report(report))


@file_command("benchmark")
@file_argument
@click.option("--queries", type=click.IntRange(min=1), default=200, show_default=True)
@k_option
@click.option("--ef", type=int, default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def benchmark_cmd(file: str, queries: int, k: int, ef: int, as_json: bool) -> None:
    """Latency percentiles per search path, and ANN recall@k against exact."""
    with open_corpus(file) as corpus:
        report = run_benchmark(corpus, queries=queries, k=k, ef=ef)
        out(json.dumps(report.to_dict(), indent=2) if as_json else render.benchmark(report))


@click.command()
@served_paths
@click.option(
    "--watch",
    "watches",
    multiple=True,
    metavar="NAME=DIR",
    help="Keep the collection NAME built from the folder DIR, updated on change (the "
    "library's NAME, --data DIR/NAME, or a served collection of that name).",
)
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where watched collections are written (default: the library, URNA_HOME).",
)
@click.option(
    "--model",
    default=None,
    help="Model for watched folders (default: the one a collection records, else minilm).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0, min_open=True),
    default=0.25,
    show_default=True,
    help="Seconds between checks of watched folders (> 0).",
)
@click.option(
    "--max-file-mb",
    type=click.IntRange(min=0),
    default=64,
    show_default=True,
    help="Watched files larger than this are skipped and reported (0: no limit).",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--max-rps",
    type=click.FloatRange(min=0),
    default=200.0,
    show_default=True,
    help="Requests a second per client address on every route but health (0: no bound).",
)
@click.option(
    "--token",
    default=None,
    help="Bearer token required on every route but health (or URNA_TOKEN); mandatory off loopback.",
)
@click.option(
    "--ray",
    "ray_address",
    default=None,
    metavar="ADDRESS|local",
    help="Serve one collection on Ray Serve: a deployment per shard and an HTTP ingress.",
)
@click.option(
    "--place",
    "places",
    multiple=True,
    metavar="INDEX=RESOURCE",
    help="With --ray: run shard INDEX on a node started with that custom resource.",
)
@click.option("--quiet", is_flag=True, help="No access log line per request.")
@click.option("--log-json", is_flag=True, help="Every log line as one JSON object.")
@device_option
@precision_option
def serve(
    paths: tuple[Path, ...],
    names: tuple[str, ...],
    ray_address: str | None,
    places: tuple[str, ...],
    watches: tuple[str, ...],
    data: Path | None,
    model: str | None,
    interval: float,
    max_file_mb: int,
    host: str,
    port: int,
    max_rps: float,
    token: str | None,
    quiet: bool,
    log_json: bool,
) -> None:
    """Serve .urna files (or every .urna in a folder) over HTTP, named by file stem; with no
    path, every corpus of the library. The MCP server for agents is at /mcp. It prints what
    it serves and its URLs, then one line per request (method, path, status, ms)."""
    from urna.server.log import ServerLog
    from urna.server.run import serve as run_server

    run_server(
        library_paths(paths, names, default=not watches),
        host=host,
        port=port,
        token=token,
        watches=list(watches),
        data=data,
        model=model,
        max_rps=max_rps,
        interval=interval,
        max_file_mb=max_file_mb,
        ray=ray_address,
        places=list(places),
        log=ServerLog(quiet=quiet, as_json=log_json),
    )


@click.command(name="mcp")
@served_paths
def mcp_cmd(paths: tuple[Path, ...], names: tuple[str, ...]) -> None:
    """The MCP server for agents over stdio: tools search, cite, read and list_corpora over
    these .urna files, collections or folders (the library when none is given)."""
    import anyio

    from urna.server.databases import load
    from urna.server.mcp import create_mcp, run_stdio

    server = create_mcp(load(library_paths(paths, names, default=True)))
    anyio.run(run_stdio, server)


COMMANDS = (eval_cmd, benchmark_cmd, serve, mcp_cmd)
