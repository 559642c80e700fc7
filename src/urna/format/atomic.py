"""Atomic file replacement: write a temporary file beside the target, fsync, rename.

On Linux the file is written unnamed (``O_TMPFILE``): a process killed while writing
(``kill -9`` runs no cleanup) leaves nothing behind, and the file gets a name only for the
instant between its link and the rename. Elsewhere (or where the filesystem refuses
``O_TMPFILE``) the temporary file is ``.NAME.<pid>.<random>.tmp``; one left by a process
that was killed is removed by the next write of the same target. The new
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


def make_folder(folder: Path) -> None:
    """Create an output folder and any missing parents (``out/x.urna`` needs no
    ``mkdir``); a path in the way that is not a folder is one clear error."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise FileError(f"cannot create output folder {folder}: a file is in the way") from None
    except OSError as exc:
        raise FileError(f"cannot create output folder {folder}: {exc.strerror}") from None


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
    unnamed = _unnamed(folder)
    if unnamed is None:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=folder
        )
    else:
        fd, tmp = unnamed, ""
    try:
        with os.fdopen(fd, "wb", closefd=not unnamed) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
            if unnamed is not None:
                os.fchmod(fd, mode)
                tmp = _name_for(folder, target.name)
                _link(fd, tmp)
        if unnamed is None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if tmp:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    finally:
        if unnamed is not None:
            os.close(unnamed)
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _unnamed(folder: Path) -> int | None:
    """A descriptor of a new unnamed file in ``folder`` (Linux O_TMPFILE), or None."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:  # a filesystem without O_TMPFILE, or no such folder: the named path says
        return None


def _link(fd: int, name: str) -> None:
    """Give the unnamed file ``fd`` the name ``name``: linkat on its /proc/self/fd entry,
    following it (a dir fd makes CPython call linkat with AT_SYMLINK_FOLLOW, not link)."""
    proc = os.open("/proc/self/fd", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.link(str(fd), name, src_dir_fd=proc, follow_symlinks=True)
    finally:
        os.close(proc)


def _name_for(folder: Path, name: str) -> str:
    """A fresh temporary name beside the target, in the pattern orphans are found by."""
    return str(folder / f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")


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
