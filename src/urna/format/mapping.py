"""How a file's bytes get into memory: a read-only map of a regular file, or of a private
copy of it (what a long-running server maps, so a rewrite in place cannot fault it)."""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile
from pathlib import Path

from urna.errors import FileError
from urna.format.regular import NotRegular, open_regular


def _private_copy(fd: int, near: Path) -> int:
    """A descriptor of an unnamed copy of ``fd``'s file (next to it when that folder is
    writable, so a copy-on-write filesystem can share the blocks): no one else can truncate
    or rewrite it, so a map of it can never fault (SIGBUS) under a long-running reader."""
    for folder in (near, None):
        try:
            copy = tempfile.TemporaryFile(dir=folder)  # noqa: SIM115 (closed below, kept open by dup)
        except OSError:
            continue
        with copy:
            os.lseek(fd, 0, os.SEEK_SET)
            with os.fdopen(os.dup(fd), "rb") as source:
                shutil.copyfileobj(source, copy, 1 << 24)
            copy.flush()
            return os.dup(copy.fileno())
    raise OSError("no folder to hold a private copy")


def map_file(path: Path, *, private: bool = False) -> tuple[mmap.mmap | None, int]:
    try:
        fd = open_regular(path)  # non-blocking: a FIFO is refused, never waited on
    except FileNotFoundError:
        raise FileError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise FileError(f"not a file: {path} is a directory") from None
    except PermissionError:
        raise FileError(f"permission denied: {path}") from None
    except NotRegular as exc:
        message = str(exc)
        if message.endswith("a directory"):
            raise FileError(f"not a file: {path} is a directory") from None
        raise FileError(f"not a regular file: {path}") from None
    except OSError as exc:
        raise FileError(f"cannot open {path}: {exc.strerror}") from None
    if private:
        try:
            copied = _private_copy(fd, path.parent)
        except OSError as exc:
            os.close(fd)
            raise FileError(f"cannot copy {path} to serve it: {exc}") from None
        os.close(fd)
        fd = copied
    try:
        st = os.fstat(fd)
        if st.st_size == 0:
            return None, 0
        try:
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ), st.st_size
        except (OSError, ValueError) as exc:
            raise FileError(f"cannot memory-map {path}: {exc}") from None
    finally:
        os.close(fd)
