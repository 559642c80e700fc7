"""The verbs about a file itself: stats, inspect, validate, cite."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

import urna
from urna.cli import render
from urna.cli.common import file_argument, file_command, open_corpus, out


@file_command()
@file_argument
def stats(file: str) -> None:
    """Manifest fields, sections, file_hash and content_hash."""
    with open_corpus(file) as corpus:
        if isinstance(corpus, urna.Collection):
            out(render.collection_stats(corpus))
        else:
            assert isinstance(corpus, urna.Corpus)
            out(render.stats(corpus))


@file_command()
@file_argument
def validate(file: str) -> None:
    """Every open check, every chunk id recomputed, a full NaN/Inf walk."""
    t0 = time.perf_counter()
    with open_corpus(file) as corpus:
        report = corpus.validate()
        elapsed = time.perf_counter() - t0
        out(
            f"OK {corpus.path}: {report.n_chunks} chunks, {report.n_sections} sections, "
            f"all checks passed in {elapsed:.3f} s file_hash={report.file_hash}"
        )


@file_command()
@file_argument
@click.option("--json", "as_json", is_flag=True, help="Print everything as one JSON object.")
def inspect(file: str, as_json: bool) -> None:
    """The whole file: manifest, section table with offsets and checksums, hashes."""
    with open_corpus(file) as corpus:
        if as_json:
            out(json.dumps(corpus.info(), ensure_ascii=False, indent=2))
        elif isinstance(corpus, urna.Collection):
            out(render.collection_inspect(corpus))
        else:
            assert isinstance(corpus, urna.Corpus)
            out(render.inspect(corpus))


@file_command()
@file_argument
@click.argument("citation")
@click.option(
    "--verify-source",
    is_flag=True,
    help="Re-read the source file and check that the cited bytes still match the text.",
)
@click.option(
    "--source-root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder that relative source_uris are read from (default: the build's source root).",
)
def cite(file: str, citation: str, verify_source: bool, source_root: Path | None) -> None:
    """Resolve a citation urna://<content_hash>/<chunk_id> and print the chunk."""
    with open_corpus(file) as corpus:
        chunk = corpus.cite(citation)
        extra: list[tuple[str, Any]] = []
        if verify_source:
            path = corpus.verify_source(chunk, source_root)
            extra = [("source", path), ("source_check", "ok (bytes match the stored text)")]
        out(render.cite(corpus, chunk, extra))


COMMANDS = (stats, validate, inspect, cite)
