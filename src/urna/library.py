"""The library: a folder of named corpora, like a ledger's or a database server's names.

``urna build ... --name NAME`` writes ``NAME.urna`` (or, with ``--shards``, a collection
folder ``NAME``) into it; every verb that takes a FILE takes ``-l NAME`` instead; ``urna list``
shows what it holds; ``urna serve`` and ``urna mcp`` with no path serve all of it.

The folder is ``URNA_HOME`` when set, else the platform's user data folder: ``urna`` under
``$XDG_DATA_HOME`` (default ``~/.local/share``) on Linux, ``~/Library/Application Support``
on macOS, ``%LOCALAPPDATA%`` on Windows.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from urna.errors import FileError, UrnaError
from urna.format.catalog import CATALOG, is_collection
from urna.search.opening import open_path

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def home() -> Path:
    """The library folder (it need not exist yet)."""
    configured = os.environ.get("URNA_HOME")
    if configured:
        return Path(configured).expanduser().absolute()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return (base / "urna").absolute()


def check_name(name: str) -> str:
    """A corpus name: letters, digits, ``.``, ``_`` and ``-``, at most 64, not a file name."""
    if name.endswith(".urna") or not NAME.fullmatch(name) or name in (".", ".."):
        raise UrnaError(
            f"invalid corpus name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit, without .urna"
        )
    return name


def target(name: str, *, collection: bool) -> Path:
    """Where a build named ``name`` writes: ``NAME.urna``, or the folder ``NAME``. A name the
    library already holds in the other form is refused (two corpora would share it)."""
    folder = home()
    check_name(name)
    file, shards = folder / f"{name}.urna", folder / name
    other = file if collection else shards
    if other.exists():
        kind = "a single file" if collection else "a collection"
        raise UrnaError(f"the library already holds {name!r} as {kind}: {other}")
    folder.mkdir(parents=True, exist_ok=True)
    return shards if collection else file


def resolve(name: str) -> Path:
    """The path of the corpus called ``name``."""
    folder = home()
    check_name(name)
    file, shards = folder / f"{name}.urna", folder / name
    if file.is_file():
        return file
    if is_collection(shards):
        return shards
    raise FileError(f"no corpus named {name!r} in the library {folder} (urna list shows them)")


@dataclass(frozen=True)
class Entry:
    """One named corpus, as ``urna list`` shows it; ``error`` is set when it does not open."""

    name: str
    path: Path
    kind: str  # "file" or "collection"
    size: int
    chunks: int = 0
    model: str = ""
    error: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": self.kind,
            "chunks": self.chunks,
            "model": self.model,
            "size": self.size,
            "path": str(self.path),
            **({"error": self.error} if self.error else {}),
        }


def paths() -> dict[str, Path]:
    """Name -> path for every corpus in the library, sorted by name (none if it is missing)."""
    folder = home()
    if not folder.is_dir():
        return {}
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".urna" and path.is_file() and NAME.fullmatch(path.stem):
            found[path.stem] = path
        elif is_collection(path) and NAME.fullmatch(path.name):
            found[path.name] = path
    return found


def entries() -> list[Entry]:
    """Every corpus in the library, each opened with the structural checks (the hashes are
    the verbs' business: ``urna validate -l NAME``)."""
    out = []
    for name, path in paths().items():
        kind = "file" if path.is_file() else "collection"
        size = _size(path)
        try:
            with open_path(path, verify="trusted") as corpus:
                out.append(Entry(name, path, kind, size, corpus.n_chunks, corpus.model))
        except UrnaError as exc:
            out.append(Entry(name, path, kind, size, error=str(exc)))
    return out


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    files = [path / CATALOG, *path.glob("*.urna")]
    return sum(f.stat().st_size for f in files if f.is_file())
