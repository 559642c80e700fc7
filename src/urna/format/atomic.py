"""Atomic file replacement: write a temporary file beside the target, fsync, rename.

The temporary file is ``.NAME.<pid>.<random>.tmp``; one left by a process that was killed
(``kill -9`` runs no cleanup) is removed by the next write of the same target. The new
file gets the mode of the file it replaces, or 0666 less the umask for a new one. A
target that exists and is not a regular file (a device such as /dev/full, a FIFO, a
folder) is refused: a rename would replace the node itself.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from urna.errors import FileError


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Yield a file that replaces ``path`` only if the block finishes without error.

    A crash or an exception leaves any previous file at ``path`` untouched and
    removes the temporary file.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    mode = _mode_for(target)
    _remove_orphans(folder, target.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _mode_for(target: Path) -> int:
    """The replaced file's permission bits, or 0666 less the umask; refuses a non-file."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return 0o666 & ~_umask()
    except OSError as exc:
        raise FileError(f"cannot write {target}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileError(f"output {target} exists and is not a regular file")
    return stat.S_IMODE(st.st_mode)


def _umask() -> int:
    """The process umask, read without changing it (Linux), else set and restored."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", "rb") as handle:
        for line in handle:
            if line.startswith(b"Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove_orphans(folder: Path, name: str) -> None:
    """Delete temporary files of this target whose writing process no longer exists."""
    pattern = re.compile(rf"\.{re.escape(name)}\.(\d+)\.[^.]+\.tmp")
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            found = pattern.fullmatch(entry.name)
            if found and not _alive(int(found.group(1))):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True
