"""Writes are atomic: a failed or killed write leaves the previous file intact."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import PLACEHOLDER, build_minimal
from urna.format import atomic, writer


@pytest.mark.parametrize("unnamed", [True, False])
def test_exception_mid_write_keeps_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    if not unnamed:  # as on a system without O_TMPFILE: a named temporary file
        monkeypatch.setattr(atomic, "_unnamed", lambda folder: None)
    path = tmp_path / "f.urna"
    build_minimal(path)
    before = path.read_bytes()

    def broken(*args: object, **kwargs: object) -> int:
        handle = args[0]
        handle.write(b"URNA half a file")  # type: ignore[attr-defined]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "write_stream", broken)
    with pytest.raises(OSError):
        build_minimal(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.urna"]


KILLED_WRITER = """
import sys, numpy as np, urna
n = 400_000
urna.build(sys.argv[1], [{"text": f"t{i}", "source_uri": "s", "byte_start": i, "byte_end": i}
           for i in range(n)], embeddings=np.ones((n, 256), dtype=np.float32),
           model="m", model_hash="sha256:" + "0" * 64, chunker_version="c/1")
"""


def _unnamed_size(pid: int, folder: Path) -> int:
    """The size of the unnamed file (O_TMPFILE) process ``pid`` is writing in ``folder``."""
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith(str(folder)) and target.endswith("(deleted)"):
                return os.stat(fd).st_size
    return 0


def test_killed_build_keeps_old_file_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "f.urna"
    build_minimal(path)
    before = path.read_bytes()
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(path)])
    deadline = time.monotonic() + 120
    try:
        # Wait until the writer's unnamed file is growing, then kill the writer.
        while time.monotonic() < deadline:
            if _unnamed_size(proc.pid, tmp_path) > 1 << 20:
                break
            if proc.poll() is not None:
                pytest.fail("the writer finished before it could be killed")
            time.sleep(0.01)
        else:
            pytest.fail("the writer never started writing")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert path.read_bytes() == before
    with urna.open(path) as corpus:
        assert corpus.n_chunks == 1
    # kill -9 ran no cleanup, and there is nothing to clean: the file had no name yet.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.urna"]


def test_an_orphan_of_a_named_write_is_removed_by_the_next(tmp_path: Path) -> None:
    """Where O_TMPFILE is not to be had, the temporary file has a name; one left by a killed
    process (its pid gone) is removed by the next write of the same target."""
    path = tmp_path / "f.urna"
    build_minimal(path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    orphan = tmp_path / f".f.urna.{int(dead.stdout)}.abc123.tmp"
    orphan.write_bytes(b"half a file")
    build_minimal(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.urna"]


def test_output_mode_follows_the_umask_and_the_replaced_file(tmp_path: Path) -> None:
    path = tmp_path / "f.urna"
    old = os.umask(0o077)
    try:
        build_minimal(path)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o600  # a new file: 0666 less the umask
    os.chmod(path, 0o640)
    build_minimal(path)
    assert path.stat().st_mode & 0o777 == 0o640  # a replaced file keeps its mode


def test_an_output_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "out.urna"
    os.mkfifo(fifo)
    with pytest.raises(urna.UrnaError, match="exists and is not a regular file"):
        build_minimal(fifo)
    assert fifo.exists() and not fifo.is_file()  # the node itself is untouched
    with pytest.raises(urna.UrnaError, match="is not a regular file"):
        build_minimal(Path("/dev/full"))
    assert not Path("/dev/full").is_file()


def test_output_folder_missing_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        urna.build(
            tmp_path / "no" / "such" / "f.urna",
            [{"text": "a", "source_uri": "s", "byte_start": 0, "byte_end": 1}],
            embeddings=np.ones((1, 2)),
            model="m",
            model_hash=PLACEHOLDER,
            chunker_version="c",
        )
