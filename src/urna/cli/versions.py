"""The verbs of a living collection: compact it, list its versions, prune old ones."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from urna.build.writer import compact_folder
from urna.cli import render
from urna.cli.common import out
from urna.errors import FileError
from urna.format.catalog import is_collection
from urna.format.versions import describe_versions, prune, writing

folder_argument = click.argument("folder", type=click.Path(path_type=Path))


def _collection(folder: Path) -> Path:
    if not is_collection(folder):
        raise FileError(f"not a collection: {folder} holds no catalog.json")
    return folder


@click.command()
@folder_argument
@click.option("--model-path", type=click.Path(path_type=Path), help="Load the model from a folder.")
@click.option(
    "--model",
    default=None,
    help="The model the collection was built with, when it is not one urna ships.",
)
def compact(folder: Path, model_path: Path | None, model: str | None) -> None:
    """Fold every segment and deletion into the shards: a fresh build's collection."""
    t0 = time.perf_counter()
    done = compact_folder(_collection(folder), model_path, model=model)
    if done is None:
        out(f"nothing to compact: {folder} has no segment and no deletion")
        return
    version, segments = done
    out(
        f"compacted {folder}: {segments} segments folded in {time.perf_counter() - t0:.3f} s\n"
        + render.kv("version", version)
    )


@click.command()
@folder_argument
@click.option("--json", "as_json", is_flag=True, help="One JSON object per version.")
def history(folder: Path, as_json: bool) -> None:
    """Every retained version, newest first: time, sources changed, chunks, size."""
    rows = describe_versions(_collection(folder))
    if as_json:
        out("\n".join(json.dumps(r) for r in rows))
        return
    lines = [
        f"{'version':<14} {'created':<28} {'added':>6} {'changed':>7} {'removed':>7} "
        f"{'chunks':>8} {'files':>5} {'bytes':>10}"
    ]
    for r in rows:
        lines.append(
            f"{str(r['version']).removeprefix('sha256:')[:12]:<14} {r['created'] or '-':<28} "
            f"{r['added']:>6} {r['changed']:>7} {r['removed']:>7} {r['chunks']:>8} "
            f"{r['files']:>5} {r['bytes']:>10}"
        )
    out("\n".join(lines))


@click.command(name="prune")
@folder_argument
@click.option("--keep", type=click.IntRange(min=1), help="Keep the newest N versions.")
@click.option("--since", metavar="TIME", help="Keep versions made at or after this ISO time.")
def prune_cmd(folder: Path, keep: int | None, since: str | None) -> None:
    """Drop old versions and the files only they name (the head always stays)."""
    if keep is None and since is None:
        raise click.UsageError("give --keep N or --since TIME")
    with writing(_collection(folder)):
        dropped = prune(folder, keep, since)
    out(f"pruned {len(dropped)} versions of {folder}")
    for version in dropped:
        out(f"  {version}")


COMMANDS = (compact, history, prune_cmd)
