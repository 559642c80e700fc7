"""Verbs: each opens the file, calls one library method, prints one result."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

import urna
from urna.builder import build
from urna.cli import render
from urna.errors import UrnaError
from urna.evaluate.latency import run_benchmark
from urna.evaluate.run import run_eval
from urna.format.manifest import PLACEHOLDER_MODEL_HASH
from urna.ingest.chunks_jsonl import read_chunks_jsonl
from urna.pipeline.run import run_build
from urna.pipeline.spec import load_spec, spec_from_args
from urna.search.query import parse_vector

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class UrnaGroup(click.Group):
    """Turns every runtime error into one ``Error: ...`` line on stderr and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UrnaError as exc:
            _die(str(exc))
        except BrokenPipeError:
            # The reader of stdout went away (e.g. `| head`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(0)
        except MemoryError:
            _die("out of memory")
        except OSError as exc:
            _die(f"{exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}")


def _die(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


def _out(text: str) -> None:
    if text:
        click.echo(text)


def _result(result: urna.SearchResult, as_json: bool) -> None:
    """The hit block, or with --json the same result as one object."""
    _out(json.dumps(result.to_dict(), ensure_ascii=False) if as_json else render.hit_block(result))


def _open(path: str) -> urna.Corpus:
    return urna.open(path)


@click.group(cls=UrnaGroup, context_settings=CONTEXT)
@click.version_option(urna.__version__, prog_name="urna")
def cli() -> None:
    """urna: offline retrieval in one portable, integrity-checked .urna file."""


k_option = click.option(
    "-k", "--k", "k", type=int, default=10, show_default=True, help="Hits to return (> 0)."
)


@cli.command()
@click.argument("file", type=click.Path(dir_okay=True, path_type=str))
@click.argument("query")
@k_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def search(file: str, query: str, k: int, as_json: bool) -> None:
    """Exact cosine search with a query vector given as a JSON array."""
    with _open(file) as corpus:
        vector = parse_vector(query)
        result = corpus.search(vector, k=k)
        _result(result, as_json)


@cli.command(name="search-ann")
@click.argument("file", type=click.Path(path_type=str))
@click.argument("query")
@k_option
@click.option("--ef", type=int, default=100, show_default=True, help="HNSW candidates to rerank.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def search_ann(file: str, query: str, k: int, ef: int, as_json: bool) -> None:
    """HNSW candidates reranked by exact cosine (exact when the file has no HNSW)."""
    with _open(file) as corpus:
        result = corpus.search_ann(parse_vector(query), k=k, ef=ef)
        _result(result, as_json)


@cli.command(name="search-graph")
@click.argument("file", type=click.Path(path_type=str))
@click.argument("query")
@k_option
@click.option("--hops", type=int, default=1, show_default=True, help="Graph steps from the seeds.")
@click.option("--ef", type=int, default=100, show_default=True, help="Seed count: exact top ef.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def search_graph(file: str, query: str, k: int, hops: int, ef: int, as_json: bool) -> None:
    """Seeds from exact, expanded over the chunk graph, reranked (exact without a graph)."""
    with _open(file) as corpus:
        result = corpus.search_graph(parse_vector(query), k=k, hops=hops, ef=ef)
        _result(result, as_json)


@cli.command(name="search-space")
@click.argument("file", type=click.Path(path_type=str))
@click.argument("query")
@click.option("--space", required=True, help="Name of the embedding space.")
@k_option
@click.option("--expect-model-hash", default=None, help="Refuse unless the space has this hash.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def search_space(
    file: str, query: str, space: str, k: int, expect_model_hash: str | None, as_json: bool
) -> None:
    """Exact search over one named embedding space (never a fallback)."""
    with _open(file) as corpus:
        result = corpus.search_space(
            parse_vector(query), space, k=k, expect_model_hash=expect_model_hash
        )
        _result(result, as_json)


@cli.command()
@click.argument("file", type=click.Path(path_type=str))
def stats(file: str) -> None:
    """Manifest fields, sections, file_hash and content_hash."""
    with _open(file) as corpus:
        _out(render.stats(corpus))


@cli.command()
@click.argument("file", type=click.Path(path_type=str))
def validate(file: str) -> None:
    """Every open check, every chunk id recomputed, a full NaN/Inf walk."""
    t0 = time.perf_counter()
    with _open(file) as corpus:
        report = corpus.validate()
        elapsed = time.perf_counter() - t0
        _out(
            f"OK {corpus.path}: {report.n_chunks} chunks, {report.n_sections} sections, "
            f"all checks passed in {elapsed:.3f} s file_hash={report.file_hash}"
        )


@cli.command()
@click.argument("file", type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print everything as one JSON object.")
def inspect(file: str, as_json: bool) -> None:
    """The whole file: manifest, section table with offsets and checksums, hashes."""
    with _open(file) as corpus:
        if as_json:
            _out(json.dumps(corpus.info(), ensure_ascii=False, indent=2))
        else:
            _out(render.inspect(corpus))


@cli.command()
@click.argument("file", type=click.Path(path_type=str))
@click.argument("citation")
@click.option(
    "--verify-source",
    is_flag=True,
    help="Re-read the source file and check that the cited bytes still match the text.",
)
@click.option(
    "--source-root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder that relative source_uris are read from (default: the .urna file's folder).",
)
def cite(file: str, citation: str, verify_source: bool, source_root: Path | None) -> None:
    """Resolve a citation urna://<content_hash>/<chunk_id> and print the chunk."""
    with _open(file) as corpus:
        chunk = corpus.cite(citation)
        extra: list[tuple[str, Any]] = []
        if verify_source:
            path = corpus.verify_source(chunk, source_root)
            extra = [("source", path), ("source_check", "ok (bytes match the stored text)")]
        _out(render.cite(corpus, chunk, extra))


@cli.command(name="build")
@click.argument("inputs", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), help="The .urna file to write.")
@click.option(
    "--from-jsonl",
    "from_jsonl",
    type=click.Path(path_type=str),
    help="Chunks that already carry vectors: text, source_uri, byte_start, byte_end, embedding.",
)
@click.option("--model", default=None, help="Embedding model (documents) or its name (JSONL).")
@click.option("--model-path", type=click.Path(path_type=Path), help="Load the model from a folder.")
@click.option("--dim", type=int, help="Embedding dimension (with --from-jsonl).")
@click.option(
    "--model-hash",
    default=PLACEHOLDER_MODEL_HASH,
    show_default="the placeholder (text queries refuse it)",
    help="sha256:<64 hex> of the model's files (with --from-jsonl).",
)
@click.option(
    "--chunker-version",
    default="external/1",
    show_default=True,
    help="Chunker name recorded with --from-jsonl.",
)
@click.option("--max-tokens", type=int, help="Chunk size limit in model tokens (default: window).")
@click.option("--overlap", type=int, default=None, help="Tokens a chunk may repeat from the last.")
@click.option("--dtype", type=click.Choice(["float32", "float16", "int8"]), default=None)
@click.option("--compress", is_flag=True, default=None, help="zstd on the non-embedding sections.")
@click.option("--title", default=None)
@click.option(
    "--preset",
    type=click.Choice(["exact", "compressed", "tiny", "hybrid"]),
    default=None,
    help="exact: float32; compressed: float16; tiny: int8 + HNSW; hybrid (default): "
    "float32 + HNSW + BM25 + chunk graph.",
)
@click.option(
    "--rerank-copy",
    is_flag=True,
    default=None,
    help="Keep a float32 copy of quantized vectors to rerank with.",
)
@click.option("--bm25/--no-bm25", default=None, help="Write the BM25 index (preset decides).")
@click.option("--dry-run", is_flag=True, help="Discover, load and chunk; embed and write nothing.")
@click.option("--rebuild", is_flag=True, help="Ignore the embedding cache: embed every chunk.")
@click.option(
    "--progress/--quiet",
    default=None,
    help="Stage lines on stderr (default: when stderr is a terminal).",
)
def build_cmd(
    inputs: tuple[Path, ...],
    output: Path | None,
    from_jsonl: str | None,
    model: str | None,
    model_path: Path | None,
    dim: int | None,
    model_hash: str,
    chunker_version: str,
    max_tokens: int | None,
    overlap: int | None,
    dtype: str | None,
    compress: bool | None,
    title: str | None,
    preset: str | None,
    rerank_copy: bool | None,
    bm25: bool | None,
    dry_run: bool,
    rebuild: bool,
    progress: bool | None,
) -> None:
    """Build a .urna file: from documents (PATH... -o OUT), a SPEC.toml, or --from-jsonl vectors."""
    if from_jsonl is not None:
        if inputs:
            raise click.UsageError("--from-jsonl takes no other inputs")
        if output is None or model is None or dim is None:
            raise click.UsageError("--from-jsonl needs -o, --model and --dim")
        _build_jsonl(
            from_jsonl,
            output,
            model,
            dim,
            model_hash,
            chunker_version,
            dtype or "float32",
            bool(compress),
            title,
        )
        return
    if not inputs:
        raise click.UsageError("give a SPEC.toml, or files and folders with -o OUT.urna")
    options = {
        "model": model,
        "model_path": model_path,
        "max_tokens": max_tokens,
        "overlap_tokens": overlap,
        "dtype": dtype,
        "compress": compress,
        "preset": preset,
        "rerank_copy": rerank_copy,
        "bm25": bm25,
    }
    if len(inputs) == 1 and inputs[0].suffix == ".toml":
        spec = load_spec(inputs[0], output=output)
        overrides: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
        spec = replace(spec, **overrides)
        if title:
            spec.metadata["title"] = title
    else:
        if output is None:
            raise click.UsageError("building from files and folders needs -o OUT.urna")
        spec = spec_from_args(list(inputs), output, **options)
        if title:
            spec.metadata["title"] = title
    show = sys.stderr.isatty() if progress is None else progress
    report = (lambda m: click.echo(m, err=True)) if show else (lambda m: None)
    summary = run_build(
        spec,
        report=report,
        warn=lambda m: click.echo(f"warning: {m}", err=True),
        dry_run=dry_run,
        use_cache=not rebuild,
        bar=show and sys.stderr.isatty(),
    )
    _out(render.build_summary(summary))


def _build_jsonl(
    from_jsonl: str,
    output: Path,
    model: str,
    dim: int,
    model_hash: str,
    chunker_version: str,
    dtype: str,
    compress: bool,
    title: str | None,
) -> None:
    if dim <= 0:
        raise urna.BuildError(f"--dim must be > 0, got {dim}")
    t0 = time.perf_counter()
    data = read_chunks_jsonl(from_jsonl, dim)
    result = build(
        output,
        data.chunks(),
        embeddings=data.embeddings,
        model=model,
        dim=dim,
        model_hash=model_hash,
        chunker_version=chunker_version,
        dtype=dtype,  # type: ignore[arg-type]
        compression="zstd" if compress else None,
        title=title,
        provenance={"source": "jsonl", "input": Path(from_jsonl).name},
    )
    elapsed = time.perf_counter() - t0
    _out(
        "\n".join(
            [
                render.kv("wrote", result.path),
                render.kv("chunks", result.n_chunks),
                render.kv("dim", dim),
                render.kv("dtype", dtype),
                render.kv("size", f"{result.size} bytes"),
                render.kv("time", f"{elapsed:.3f} s"),
                render.kv("file_hash", result.file_hash),
                render.kv("content_hash", result.content_hash),
            ]
        )
    )


mode_option = click.option(
    "--mode",
    type=click.Choice(["auto", "hybrid", "vector", "text"]),
    default="auto",
    show_default=True,
    help="text: BM25 only; vector: the file's model; hybrid: both, fused; auto: all the file has.",
)
fusion_option = click.option(
    "--fusion",
    type=click.Choice(["calibrated", "rrf"]),
    default=None,
    help="How hybrid fuses the two rankings (default: the file's recorded choice, calibrated).",
)
model_path_option = click.option(
    "--model-path",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder holding the file's model (default: found by the model's name).",
)


@cli.command(name="search-text")
@click.argument("file", type=click.Path(path_type=str))
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
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def search_text(
    file: str,
    text: str,
    k: int,
    mode: str,
    fusion: str | None,
    candidates: int | None,
    model_path: Path | None,
    as_json: bool,
) -> None:
    """Search by text: BM25, the file's own model (after the model gate), or both fused."""
    with _open(file) as corpus:
        result = corpus.search_text(
            text, k=k, mode=mode, fusion=fusion, candidates=candidates, model_path=model_path
        )
        _result(result, as_json)


@cli.command()
@click.argument("file", type=click.Path(path_type=str))
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
def ask(
    file: str,
    text: str,
    k: int,
    mode: str,
    fusion: str | None,
    disclose: str,
    model_path: Path | None,
) -> None:
    """The passages that answer a question, each with its citation."""
    with _open(file) as corpus:
        result = corpus.search_text(text, k=k, mode=mode, fusion=fusion, model_path=model_path)
        _out(render.ask(result, explain=disclose == "explain"))


@cli.command()
@click.argument("file", type=click.Path(path_type=str))
@click.argument("text")
@k_option
@mode_option
@fusion_option
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "json"]), default="jsonl", show_default=True
)
@model_path_option
def retrieve(
    file: str, text: str, k: int, mode: str, fusion: str | None, fmt: str, model_path: Path | None
) -> None:
    """Hits as JSON for programs: one object per hit (jsonl) or one array (json)."""
    with _open(file) as corpus:
        result = corpus.search_text(text, k=k, mode=mode, fusion=fusion, model_path=model_path)
        _out(render.retrieve(result, fmt))


@cli.command(name="eval")
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
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--progress/--quiet", default=None, help="Stage lines on stderr.")
def eval_cmd(
    folder: Path,
    model: str,
    output: Path | None,
    rebuild: bool,
    split: str,
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
        report=(lambda m: click.echo(m, err=True)) if show else (lambda m: None),
    )
    _out(json.dumps(report.to_dict(), indent=2) if as_json else render.eval_report(report))


@cli.command(name="benchmark")
@click.argument("file", type=click.Path(path_type=str))
@click.option("--queries", type=int, default=200, show_default=True)
@k_option
@click.option("--ef", type=int, default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def benchmark_cmd(file: str, queries: int, k: int, ef: int, as_json: bool) -> None:
    """Latency percentiles per search path, and ANN recall@k against exact."""
    if queries <= 0:
        raise urna.QueryError(f"invalid queries: {queries}")
    with _open(file) as corpus:
        report = run_benchmark(corpus, queries=queries, k=k, ef=ef)
        _out(json.dumps(report.to_dict(), indent=2) if as_json else render.benchmark(report))


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--watch",
    "watches",
    multiple=True,
    metavar="NAME=DIR",
    help="Keep NAME.urna built from a folder of documents, rebuilt on change.",
)
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where watched databases are written (default: ./urna-data).",
)
@click.option("--model", default="minilm", show_default=True, help="Model for watched folders.")
@click.option(
    "--interval",
    type=float,
    default=2.0,
    show_default=True,
    help="Seconds between checks of watched folders.",
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
def serve(
    paths: tuple[Path, ...],
    watches: tuple[str, ...],
    data: Path | None,
    model: str,
    interval: float,
    host: str,
    port: int,
    max_rps: float,
    token: str | None,
) -> None:
    """Serve .urna files (or every .urna in a folder) over HTTP, named by file stem."""
    from urna.server.run import serve as run_server

    if interval <= 0:
        raise urna.UrnaError(f"--interval must be > 0, got {interval}")
    run_server(
        list(paths),
        host=host,
        port=port,
        token=token,
        watches=list(watches),
        data=data,
        model=model,
        max_rps=max_rps,
        interval=interval,
    )


def main() -> None:
    cli(prog_name="urna")
