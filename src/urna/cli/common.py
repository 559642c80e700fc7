"""What every verb shares: its options (choices taken from the library's own tuples), opening
a corpus, and printing a result."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

import urna
from urna.cli import render
from urna.search.fusion import FUSIONS
from urna.search.protocol import Searchable
from urna.search.result import SearchResult
from urna.search.text import MODES

F = TypeVar("F", bound=Callable[..., Any])


def out(text: str) -> None:
    if text:
        click.echo(text)


def print_result(result: SearchResult, as_json: bool) -> None:
    """The hit block, or with --json the same result as one object (the wire shape)."""
    out(json.dumps(result.to_dict(), ensure_ascii=False) if as_json else render.hit_block(result))


def open_corpus(path: str) -> Searchable:
    return urna.open(path)


file_argument = click.argument("file", type=click.Path(path_type=str))
k_option = click.option(
    "-k", "--k", "k", type=int, default=10, show_default=True, help="Hits to return (> 0)."
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the result as one JSON object."
)
mode_option = click.option(
    "--mode",
    type=click.Choice(MODES),
    default="auto",
    show_default=True,
    help="text: BM25 only; vector: the file's model; hybrid: both, fused; auto: all the file has.",
)
fusion_option = click.option(
    "--fusion",
    type=click.Choice(FUSIONS),
    default=None,
    help="How hybrid fuses the two rankings (default: the file's recorded choice).",
)
model_path_option = click.option(
    "--model-path",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder holding the file's model (default: found by the model's name).",
)


def filter_options(command: F) -> F:
    """--source GLOB and --section PREFIX: rank only the chunks they keep."""
    command = click.option(
        "--section",
        default=None,
        metavar="PREFIX",
        help="Only chunks whose section path starts with PREFIX (e.g. 'Guide / Install').",
    )(command)
    return click.option(
        "--source",
        default=None,
        metavar="GLOB",
        help="Only chunks whose source_uri matches GLOB (e.g. 'docs/*.md').",
    )(command)
