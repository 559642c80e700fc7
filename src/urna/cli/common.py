"""What every verb shares: its options (choices taken from the library's own tuples), opening
a corpus, and printing a result."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

import urna
from urna import library
from urna.cli import render
from urna.embed.device import DEVICE_VARIABLE, DEVICES, GPUS, resolved_device
from urna.embed.precision import PRECISION_VARIABLE, PRECISIONS
from urna.errors import QueryError, missing_extra
from urna.format.fusion import FUSIONS
from urna.search.protocol import Searchable
from urna.search.request import GROUPS, MODES
from urna.search.result import SearchResult
from urna.search.several import Several

F = TypeVar("F", bound=Callable[..., Any])


def out(text: str) -> None:
    if text:
        click.echo(text)


def print_result(result: SearchResult, as_json: bool) -> None:
    """The hit block, or with --json the same result as one object (the wire shape)."""
    out(json.dumps(result.to_dict(), ensure_ascii=False) if as_json else render.hit_block(result))


def open_corpus(path: str) -> Searchable:
    """The verb's FILE, at the version ``--at`` names (collections keep their versions); or,
    for a search verb given ``-l a -l b``, those corpora searched as one."""
    if path.startswith(SEVERAL):
        return SeveralOpen(path.removeprefix(SEVERAL).split(","))  # type: ignore[return-value]
    ctx = click.get_current_context(silent=True)
    at = ctx.meta.get(AT_KEY) if ctx is not None else None
    return urna.open(path, at=at) if at else urna.open(path)


SEVERAL = "urna-several:"  # FILE when a search verb names several library corpora
SEARCH_VERBS = ("find", "search-text")


class SeveralOpen(Several):
    """Several library corpora, opened for one command and closed after it."""

    def __init__(self, names: list[str]) -> None:
        if click.get_current_context().meta.get(AT_KEY):
            raise QueryError("--at applies to one corpus, not several")
        self._opened = {name: urna.open(library.resolve(name)) for name in names}
        super().__init__(self._opened)

    def __enter__(self) -> SeveralOpen:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
        for corpus in self._opened.values():
            corpus.close()


AT_KEY = "urna.at"


def _remember_at(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        if not value.strip():
            raise click.BadParameter("--at takes a version (hash prefix) or an ISO time")
        ctx.meta[AT_KEY] = value


class FileCommand(click.Command):
    """A verb whose first argument is a FILE (or collection folder): ``-l NAME`` names a corpus
    in the library instead, anywhere on the line, and stands in for that argument."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        names, rest = _take_library(self, list(args))
        if len(names) > 1 and self.name not in SEARCH_VERBS:
            raise click.UsageError("give -l NAME once (only find and search-text take several)")
        if len(names) > 1:
            for name in names:
                library.resolve(name)  # each must exist: say which does not
            rest = [SEVERAL + ",".join(names), *rest]
        elif names:
            rest = [str(library.resolve(names[0])), *rest]
        return super().parse_args(ctx, rest)


def _take_library(command: click.Command, args: list[str]) -> tuple[list[str], list[str]]:
    """Remove ``-l NAME`` / ``--library NAME`` / ``--library=NAME`` / ``-lNAME`` from ``args``
    (not a value of another option, not after ``--``), returning the NAMEs (``a,b`` is two)."""
    takes_value = {
        opt
        for p in command.params
        if isinstance(p, click.Option) and not p.is_flag and p.name != "library"
        for opt in p.opts
    }
    names: list[str] = []
    rest, i = [], 0
    while i < len(args):
        token = args[i]
        if token == "--":
            rest += args[i:]
            break
        if token in ("-l", "--library"):
            if i + 1 >= len(args):
                raise click.UsageError(f"option {token} requires a corpus name")
            given, i = args[i + 1], i + 2
        elif token.startswith("--library="):
            given, i = token.partition("=")[2], i + 1
        elif token.startswith("-l") and not token.startswith("--"):
            given, i = token[2:], i + 1
        else:
            rest.append(token)
            if token in takes_value and i + 1 < len(args):
                rest.append(args[i + 1])
                i += 1
            i += 1
            continue
        names.extend(given.split(","))  # an empty name is refused by name, as any bad one
    return names, rest


def file_command(name: str | None = None) -> Callable[[F], click.Command]:
    """``click.command`` for a verb that takes a FILE (or ``-l NAME``)."""
    return click.command(name=name, cls=FileCommand)


def file_argument(command: F) -> F:
    """The FILE argument, and ``-l NAME`` for a corpus of the library in its place."""
    command = click.option(
        "-l",
        "--library",
        metavar="NAME",
        expose_value=False,
        help="A corpus of the library (URNA_HOME; see urna list) in place of FILE.",
    )(command)
    command = click.option(
        "--at",
        metavar="VERSION",
        expose_value=False,
        callback=_remember_at,
        help="A collection's earlier version: a version hash prefix or an ISO time.",
    )(command)
    return click.argument("file", type=click.Path(path_type=str))(command)


def hits_option(dest: str, alias: str, help: str = "Hits to return.") -> Callable[[F], F]:
    """The one hit-count option of every search verb: -k / --limit, one more alias. Not a
    number is a usage error (exit 2); a number of 0 or less is an error (``Error: invalid
    k: 0``, exit 1), as the urna seed documents."""
    return click.option(
        "-k",
        "--limit",
        alias,
        dest,
        type=int,
        default=10,
        show_default=True,
        callback=_positive_k,
        help=help,
    )


def _positive_k(ctx: click.Context, param: click.Parameter, value: int) -> int:
    if value <= 0:
        raise QueryError(f"invalid k: {value}")
    return value


def _chosen_device(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Set the process's embedding device (``embed/device.py``); a GPU torch does not see
    is an error before any work starts."""
    if value is None:
        return
    os.environ[DEVICE_VARIABLE] = value
    if value in GPUS:
        try:
            import torch
        except ImportError:
            raise missing_extra("sentence-transformers") from None
        resolved_device(value, torch)


device_option = click.option(
    "--device",
    type=click.Choice(DEVICES),
    default=None,
    expose_value=False,
    callback=_chosen_device,
    help="Where the transformer embeds: auto (a GPU torch sees, else the CPU; the default), "
    "cpu, cuda or mps.",
)


def _chosen_precision(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Set the process's embedding precision (``embed/precision.py``)."""
    if value is not None:
        os.environ[PRECISION_VARIABLE] = value


precision_option = click.option(
    "--precision",
    type=click.Choice(("auto", *PRECISIONS)),
    default=None,
    expose_value=False,
    callback=_chosen_precision,
    help="The transformer's arithmetic: auto (the default: int8 on a CPU with VNNI, else "
    "bfloat16 on one with native bf16, else float32; an existing output keeps its own), "
    "float32, bfloat16, or int8 (ONNX Runtime, quantized weights).",
)
k_option = hits_option("k", "--k")
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


QUERY_OPTIONS: dict[str, Callable[[Any], Any]] = {
    "k": k_option,
    "mode": mode_option,
    "fusion": fusion_option,
    "candidates": click.option(
        "--candidates",
        type=int,
        default=None,
        help="Candidates per method before fusion (default max(4k, 64)).",
    ),
    "ef": click.option(
        "--ef",
        type=int,
        default=100,
        show_default=True,
        help="HNSW candidates to rerank (search-ann); exact seeds (search-graph).",
    ),
    "hops": click.option(
        "--hops", type=int, default=1, show_default=True, help="Graph steps from the seeds."
    ),
    "space": click.option("--space", required=True, help="Name of the embedding space."),
    "expect_model_hash": click.option(
        "--expect-model-hash", default=None, help="Refuse unless the space has this hash."
    ),
    "model_path": model_path_option,
    "group": click.option(
        "--group",
        type=click.Choice(GROUPS),
        default=None,
        help="document: the best chunk of each of k documents, with how many more matched.",
    ),
    "typos": click.option(
        "--typos/--no-typos",
        default=True,
        show_default=True,
        help="Read a word the corpus does not hold as its nearest word (1 edit from 5 "
        "letters, 2 from 9), in the text method.",
    ),
    "vector_index": click.option(
        "--vector-index",
        type=click.Choice(["exact", "ann"]),
        default="exact",
        show_default=True,
        help="Hybrid's vector side: exact (every chunk scored) or ann (HNSW walks, reranked "
        "exactly; faster on large corpora, approximate).",
    ),
    "lang": click.option(
        "--lang",
        default=None,
        metavar="CODE",
        help="The query's language (de, fr, ...), for a corpus built with --lang auto: its "
        "words are read in it. Without it, the language its stop words show, else every "
        "language the corpus holds.",
    ),
    "facets": click.option(
        "--facets",
        default=None,
        metavar="FIELD,...",
        help="Count the values of these fields (and folder, source, section) among what "
        "matched: every matching chunk in text mode, the candidate pool in vector and hybrid.",
    ),
    "source": click.option(
        "--source",
        default=None,
        metavar="GLOB",
        help="Only chunks whose source path matches GLOB, as .gitignore reads it: 'taxes*' "
        "matches at any depth, 'docs/**/*.md' under docs.",
    ),
    "section": click.option(
        "--section",
        default=None,
        metavar="PREFIX",
        help="Only chunks whose section path starts with PREFIX (e.g. 'Guide / Install').",
    ),
    "where": click.option(
        "--where",
        default=None,
        metavar="JSON",
        help='Only chunks whose metadata passes this filter, e.g. \'{"year": {"$gte": 2020}}\' '
        "(operators $eq $ne $gt $gte $lt $lte $in $nin $contains $exists $and $or $not).",
    ),
}
FILTERS = ("source", "section", "where")


def query_options(*names: str) -> Callable[[F], F]:
    """The options of these parts of a query (``urna.Query``), handed to the verb as one
    mapping ``asked``: no verb lists a query's parameters one by one."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            asked = {name: kwargs.pop(name) for name in names}
            return command(*args, asked=asked, **kwargs)

        for name in reversed(names):
            wrapper = QUERY_OPTIONS[name](wrapper)
        return wrapper  # type: ignore[return-value]

    return decorate


def library_paths(paths: tuple[Path, ...], names: tuple[str, ...], *, default: bool) -> list[Path]:
    """What a server verb serves: its paths and the named corpora, or (``default`` and
    neither given) every corpus of the library."""
    chosen = [*paths, *(library.resolve(n) for n in names)]
    if chosen or not default:
        return chosen
    found = list(library.paths().values())
    if not found:
        raise urna.UrnaError(
            f"nothing to serve: the library {library.home()} holds no corpora "
            "(build one with urna build ... --name NAME, or give files)"
        )
    return found


def served_paths(command: F) -> F:
    """PATHS and repeatable ``-l NAME`` for the server verbs (none of either: the library)."""
    command = click.option(
        "-l",
        "--library",
        "names",
        multiple=True,
        metavar="NAME",
        help="This corpus of the library (repeatable); with no path at all, the whole library.",
    )(command)
    return click.argument("paths", nargs=-1, type=click.Path(path_type=Path))(command)
