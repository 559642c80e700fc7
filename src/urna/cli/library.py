"""The library's own verb: ``urna list``, the named corpora with their size and model."""

from __future__ import annotations

import json

import click

from urna import library
from urna.cli.common import out


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError


@click.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print the corpora as one JSON object.")
def list_cmd(as_json: bool) -> None:
    """The corpora of the library (URNA_HOME): name, chunks, model, size."""
    folder = library.home()
    entries = library.entries()
    if as_json:
        out(json.dumps({"library": str(folder), "corpora": [e.to_dict() for e in entries]}))
        return
    if not entries:
        out(f"no corpora in the library {folder} (urna build ... --name NAME adds one)")
        return
    width = max(len("NAME"), *(len(e.name) for e in entries))
    lines = [f"{'NAME':<{width}}  {'CHUNKS':>8}  {'SIZE':>10}  MODEL"]
    for e in entries:
        if e.error:
            lines.append(f"{e.name:<{width}}  {'-':>8}  {_size(e.size):>10}  (error: {e.error})")
            continue
        kind = "" if e.kind == "file" else "  (collection)"
        lines.append(f"{e.name:<{width}}  {e.chunks:>8}  {_size(e.size):>10}  {e.model}{kind}")
    lines.append(f"({len(entries)} {'corpus' if len(entries) == 1 else 'corpora'} in {folder})")
    out("\n".join(lines))


COMMANDS = (list_cmd,)
