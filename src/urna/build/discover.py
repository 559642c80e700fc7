"""Find the files a build reads: supported types under each source, include/exclude globs."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from urna.build.spec import Source
from urna.errors import BuildError
from urna.ingest.loaders import kind_of


@dataclass(frozen=True)
class Found:
    path: Path
    source_uri: str
    kind: str


def _matches(rel: str, patterns: tuple[str, ...]) -> bool:
    # "**/" also matches at the top level, as in most glob dialects.
    return any(
        fnmatch.fnmatch(rel, p) or (p.startswith("**/") and fnmatch.fnmatch(rel, p[3:]))
        for p in patterns
    )


def source_uri(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()


def discover(sources: tuple[Source, ...], base: Path) -> tuple[list[Found], list[tuple[Path, str]]]:
    """(files to read, sorted by source_uri; skipped files with the reason)."""
    found: dict[str, Found] = {}
    skipped: list[tuple[Path, str]] = []
    for source in sources:
        if not source.path.exists():
            raise BuildError(f"source not found: {source.path}")
        if not (source.path.is_file() or source.path.is_dir()):
            raise BuildError(f"source is not a regular file or a folder: {source.path}")
        if source.path.is_file():
            candidates = [(source.path, source.path.name)]
        else:
            candidates = []
            for root, dirs, files in os.walk(source.path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if name.startswith("."):
                        continue
                    full = Path(root) / name
                    candidates.append((full, full.relative_to(source.path).as_posix()))
        for full, rel in candidates:
            if source.include and not _matches(rel, source.include):
                continue
            if source.exclude and _matches(rel, source.exclude):
                continue
            kind = kind_of(full)
            if kind is None:
                skipped.append((full, f"unsupported file type {full.suffix or '(none)'}"))
                continue
            if not full.is_file():  # a FIFO, a device, a socket, a broken or looping link
                skipped.append((full, "not a regular file"))
                continue
            uri = source_uri(full, base)
            found.setdefault(uri, Found(full, uri, kind))
    return [found[k] for k in sorted(found)], skipped
