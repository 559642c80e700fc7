"""The ``urna`` command group: every runtime error becomes one ``Error: ...`` line and exit 1;
usage errors exit 2 (click). The verbs live in ``search``, ``corpus``, ``build`` and ``tools``."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

import urna
from urna.cli import build, corpus, find, library, search, tools, versions
from urna.cli.examples import EXAMPLES, GROUPS
from urna.errors import UrnaError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class UrnaGroup(click.Group):
    """Turns every runtime error into one ``Error: ...`` line on stderr and exit code 1."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """In the order they are added: find first, the verbs for people before the rest."""
        return list(self.commands)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The verbs in their groups (``cli/examples.py``), each with its short help."""
        limit = formatter.width - 6 - max(len(n) for n in self.commands)
        for title, names in GROUPS:
            rows = [(n, self.commands[n].get_short_help_str(limit)) for n in names]
            with formatter.section(title):
                formatter.write_dl(rows)

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
        except UnicodeError as exc:  # e.g. an argument that is not UTF-8 (surrogate-escaped)
            _die(f"text that is not valid UTF-8 ({getattr(exc, 'reason', exc)})")
        except RuntimeError as exc:
            if not _raised_by_pathlib(exc):  # its resolve() on a looping link (Python < 3.13)
                raise
            _die(f"a symlink loop: {exc}")
        except OSError as exc:
            _die(f"{exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}")


def _raised_by_pathlib(exc: BaseException) -> bool:
    """Whether the innermost frame of ``exc`` ran in pathlib: the only RuntimeError urna
    turns into an error line (by where it came from, never by its words)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_globals.get("__name__") == "pathlib"


def _die(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


@click.group(cls=UrnaGroup, context_settings=CONTEXT)
@click.version_option(urna.__version__, prog_name="urna")
def cli() -> None:
    """urna: offline retrieval in one portable, integrity-checked .urna file."""


for module in (find, search, corpus, library, build, versions, tools):
    for command in module.COMMANDS:
        command.epilog = f"\b\nExample: {EXAMPLES[command.name or '']}"  # \b: not rewrapped
        cli.add_command(command)


def main() -> None:
    cli(prog_name="urna")
