"""Verbs: each opens the file, calls one library method, prints one result."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

import urna
from urna.builder import build
from urna.cli import render
from urna.errors import UrnaError
from urna.ingest.chunks_jsonl import read_chunks_jsonl
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
    click.echo(text)


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
        _out(
            json.dumps(result.to_dict(), ensure_ascii=False)
            if as_json
            else render.hit_block(result)
        )


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
@click.option(
    "--from-jsonl",
    "from_jsonl",
    type=click.Path(path_type=str),
    required=True,
    help="Chunks with vectors: text, source_uri, byte_start, byte_end, embedding per line.",
)
@click.option(
    "-o", "--output", type=click.Path(path_type=str), required=True, help="The .urna to write."
)
@click.option("--model", required=True, help="Name of the model that made the vectors.")
@click.option("--dim", type=int, required=True, help="Embedding dimension.")
@click.option(
    "--model-hash",
    default="sha256:" + "0" * 64,
    show_default="the placeholder (text queries refuse it)",
    help="sha256:<64 hex> of the model's files.",
)
@click.option("--chunker-version", default="external/1", show_default=True)
@click.option(
    "--dtype",
    type=click.Choice(["float32", "float16", "int8"]),
    default="float32",
    show_default=True,
)
@click.option("--compress", is_flag=True, help="zstd on every non-embedding section.")
@click.option("--title", default=None)
def build_cmd(
    from_jsonl: str,
    output: str,
    model: str,
    dim: int,
    model_hash: str,
    chunker_version: str,
    dtype: str,
    compress: bool,
    title: str | None,
) -> None:
    """Write a .urna file from chunks that already carry their vectors."""
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


def main() -> None:
    cli(prog_name="urna")
