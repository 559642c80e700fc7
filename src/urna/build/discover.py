"""Find the files a build reads: supported types under each source, include/exclude globs.

Patterns are read as ``.gitignore`` reads them (pathspec, as ``--source`` reads its own):
``include`` keeps the files any pattern matches, ``exclude`` drops those any matches, and a
walk skips hidden names and, as ripgrep does, what the ``.gitignore`` and ``.urnaignore``
files inside the walked folder ignore (each relative to its own folder, a deeper file's
patterns after its parents'), unless the source says ``ignore_files = false``
(``--no-ignore``).

Links, as ripgrep treats them: a walk never follows a link to a folder, and follows a link
to a file only where the file lies inside the folder walked, unless the source asks for it
(``follow_links``, ``--follow-links``); a link to anything but a regular file is never read.
A file given by name is read wherever its link leads: the user named it.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pathspec

from urna.build.spec import Source, root_of
from urna.errors import BuildError
from urna.format.regular import inside, read_regular
from urna.ingest.loaders import kind_of


@dataclass(frozen=True)
class Found:
    location: str  # where the file is read (a string: a large folder makes many)
    source_uri: str
    kind: str

    @property
    def path(self) -> Path:
        return Path(self.location)


IGNORE_FILES = (".gitignore", ".urnaignore")
MAX_IGNORE = 1 << 20  # an ignore file larger than this is not read
Ignores = tuple[tuple[str, Any], ...]  # (the folder's path relative to the walk, its spec)


def _matches(rel: str, patterns: tuple[str, ...]) -> bool:
    return bool(_spec(patterns).match_file(rel))


@functools.lru_cache(maxsize=64)
def _spec(patterns: tuple[str, ...]) -> Any:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _ignores(folder: str, rel: str, above: Ignores, names: list[str]) -> Ignores:
    """``above`` and the specs of this folder's ignore files ``names`` (regular files inside
    the folder only: one that is a link out of it, or a FIFO, is not read)."""
    found = list(above)
    for name in names:
        try:
            text = read_regular(inside(Path(folder), name), MAX_IGNORE)
        except OSError:  # missing, a link out (Outside), not regular (NotRegular)
            continue
        if len(text) <= MAX_IGNORE:
            lines = text.decode("utf-8", "replace").splitlines()
            found.append((rel, pathspec.GitIgnoreSpec.from_lines(lines)))
    return tuple(found)


def _ignored(rel: str, ignores: Ignores) -> bool:
    """What the nearest ignore file with a say decides (a ``!`` pattern re-includes)."""
    verdict = None
    for where, spec in ignores:
        decided = spec.check_file(rel[len(where) :]).include
        if decided is not None:
            verdict = decided
    return bool(verdict)


def source_uri(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()


Entry = tuple[str, str, bool, bool]  # path, path relative to the source, link, regular


def _walk(folder: Path, use_ignores: bool = True) -> list[Entry]:
    """Every file under ``folder`` (hidden names and what ignore files ignore skipped,
    folder links not followed), sorted by path. One scandir per folder: no stat for plain
    files (their dirent says what they are)."""
    out: list[Entry] = []
    stack: list[tuple[str, str, Ignores]] = [(str(folder), "", ())]
    while stack:
        here, rel, above = stack.pop()
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError:
            continue
        # Only a folder whose listing holds an ignore file pays a look at it.
        present = [e.name for e in entries if e.name in IGNORE_FILES] if use_ignores else []
        ignores = _ignores(here, rel, above, present) if present else above
        folders = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            name = f"{rel}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                if not (ignores and _ignored(name + "/", ignores)):
                    folders.append((entry.path, name + "/", ignores))
            elif ignores and _ignored(name, ignores):
                continue
            else:
                link = entry.is_symlink()
                regular = not link and entry.is_file(follow_symlinks=False)
                out.append((entry.path, name, link, regular))
        stack.extend(reversed(folders))
    out.sort(key=lambda x: x[1])
    return out


def _under(path: str, root: str) -> bool:
    """Whether ``path``'s real location lies inside the folder ``root`` (a real path)."""
    return os.path.realpath(path).startswith(root.rstrip(os.sep) + os.sep)


def discover(sources: tuple[Source, ...], base: Path) -> tuple[list[Found], list[tuple[Path, str]]]:
    """(files to read, sorted by source_uri; skipped files with the reason). A source outside
    ``base`` is named relative to its own folder (``root_of``); a file whose name there is
    another's already found is skipped and reported."""
    found: dict[str, Found] = {}
    skipped: list[tuple[Path, str]] = []
    for source in sources:
        if not source.path.exists():
            raise BuildError(f"source not found: {source.path}")
        if not (source.path.is_file() or source.path.is_dir()):
            raise BuildError(f"source is not a regular file or a folder: {source.path}")
        base_resolved = root_of(source.path, base.resolve())
        prefix = None  # where the walked folder sits under base (files in it need no resolve)
        root = os.path.realpath(source.path)
        if source.path.is_file():
            candidates: list[Entry] = [(str(source.path), source.path.name, True, False)]
        else:
            prefix = Path(os.path.relpath(source.path.resolve(), base_resolved)).as_posix()
            candidates = _walk(source.path, source.ignore_files)
        for full, rel, link, regular in candidates:
            if source.include and not _matches(rel, source.include):
                continue
            if source.exclude and _matches(rel, source.exclude):
                continue
            kind = kind_of(full)
            if kind is None:
                suffix = os.path.splitext(full)[1]
                skipped.append((Path(full), f"unsupported file type {suffix or '(none)'}"))
                continue
            if link and not os.path.isfile(full):  # a broken or looping link, or a non-file
                skipped.append((Path(full), "not a regular file"))
                continue
            if link and prefix is not None and not source.follow_links and not _under(full, root):
                skipped.append((Path(full), f"a link out of {source.path} (--follow-links)"))
                continue
            if source.max_bytes is not None and (size := os.path.getsize(full)) > source.max_bytes:
                skipped.append((Path(full), f"{size} bytes, over the limit of {source.max_bytes}"))
                continue
            if not link and not regular:  # a FIFO, a device, a socket
                skipped.append((Path(full), "not a regular file"))
                continue
            if prefix is None or link:
                uri = source_uri(Path(full), base_resolved)
            else:  # no folder link was followed: the path below the resolved folder is real
                uri = rel if prefix == "." else f"{prefix}/{rel}"
            held = found.setdefault(uri, Found(full, uri, kind))
            if held.location != full and os.path.realpath(held.location) != os.path.realpath(full):
                skipped.append((Path(full), f"named {uri}, as {held.location} already is"))
    return [found[k] for k in sorted(found)], skipped
