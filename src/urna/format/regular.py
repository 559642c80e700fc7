"""Opening a path that must be a regular file, without ever blocking on something else.

``open()`` on a FIFO waits for a writer, and a character device (``/dev/zero``) never
ends. Every path urna reads (a .urna file, a catalog, a spec, a source document, a
source re-read by ``cite --verify-source``) is opened non-blocking and checked with
``fstat`` on the open descriptor (no race with a rename) before a byte is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotRegular(OSError):
    """The path exists but is not a regular file (a FIFO, a device, a socket, a folder)."""


class Outside(OSError):
    """A name inside a folder is a symbolic link that leads out of it."""


def inside(folder: Path, name: str) -> Path:
    """``folder / name``, where a collection reads it: a symbolic link is followed only when
    it resolves inside ``folder``, else refused (``Outside``) with nothing of its target
    opened (``lstat`` and ``realpath`` look at the link and the folders, never the file)."""
    path = folder / name
    try:
        link = stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return path  # missing or unreadable: the open that follows says which
    if not link:
        return path
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(folder))
    if root not in real.parents:
        raise Outside(f"{path} is a symbolic link out of its folder {folder}")
    return real


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of a regular file (the caller closes it); raises
    FileNotFoundError, PermissionError, NotRegular or another OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise NotRegular(f"{path} is {kind}")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit + 1`` of them when a limit is given, so
    the caller can tell it was too large)."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        return handle.read() if limit is None else handle.read(limit + 1)


def describe(path: Path, exc: OSError) -> str:
    """A one-line reason for an OSError raised while reading ``path``."""
    if isinstance(exc, NotRegular | Outside):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"{path} not found"
    if isinstance(exc, PermissionError):
        return f"permission denied: {path}"
    return f"cannot read {path}: {exc.strerror or exc}"
