"""Progress people can see, and builds that resume: a build on a terminal shows a bar per
long stage (done/total, time left), a piped one a line every few seconds, and a build killed
halfway through embedding embeds only the rest when run again (each finished slice of 512
vectors is committed to the embedding cache as it is done).

The builds run ``urna build`` in a child process whose model is the stored-vector stand-in
(``tests/stored_vectors.py``), slowed down so that a stage lasts long enough to watch."""

from __future__ import annotations

import os
import pty
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import have

ROOT = Path(__file__).resolve().parents[1]
# ``urna ARGS...`` with every model resolved to stored vectors that take DELAY s a slice.
CHILD = """
import sys, time
sys.path.insert(0, {root!r})
from tests.stored_vectors import StoredVectors
from urna.build import writer

class Slow(StoredVectors):
    def embed(self, texts):
        time.sleep({delay})
        return super().embed(texts)

writer.resolve = lambda *a, **k: Slow()
from urna.cli import main
sys.argv = ["urna", *sys.argv[1:]]
main()
"""


def _docs(folder: Path, n: int) -> None:
    folder.mkdir()
    for i in range(n):
        (folder / f"d{i:04d}.md").write_text(f"# Doc {i}\n\nnote number {i} about krill.\n")


def _child(delay: float) -> list[str]:
    return [sys.executable, "-c", CHILD.format(root=str(ROOT), delay=delay)]


def _cached(cache: Path) -> int:
    path = cache / "embeddings.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=1) as db:
            return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_a_build_killed_while_embedding_embeds_only_the_rest(tmp_path: Path) -> None:
    docs, out, cache = tmp_path / "docs", tmp_path / "out.urna", tmp_path / "cache"
    _docs(docs, 1600)  # 1600 chunks: four slices of 512 (the last one shorter)
    env = {**os.environ, "URNA_CACHE_DIR": str(cache)}
    args = ["build", str(docs), "-o", str(out), "--quiet"]
    child = subprocess.Popen(
        [*_child(1.5), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while _cached(cache) < 512 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(30)
    kept = _cached(cache)
    assert 512 <= kept < 1600, kept  # killed halfway: some slices saved, not all
    assert not out.exists()
    again = subprocess.run(
        [*_child(0), *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    lines = dict(line.split(":", 1) for line in again.stdout.splitlines() if ":" in line)
    assert int(lines["embedded"]) == 1600 - kept and int(lines["cached"]) == kept, lines


@pytest.mark.skipif(not have("tqdm"), reason="the bar is tqdm's (the embed extra brings it)")
def test_a_build_on_a_terminal_shows_a_bar_and_piped_a_line_every_few_seconds(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 2100)
    env = {**os.environ, "URNA_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "100"}
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [*_child(0.8), "build", str(docs), "-o", str(tmp_path / "a.urna")],
        env=env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 120)
            if not ready:
                break
            try:
                block = os.read(leader, 4096)
            except OSError:  # the child closed its side
                break
            if not block:
                break
            seen += block
    finally:
        child.wait(60)
        os.close(leader)
    screen = seen.decode("utf-8", "replace")
    assert child.returncode == 0, screen
    assert "embed:" in screen and "/2100" in screen, screen  # done/total
    assert "<" in screen and "chunk/s" in screen, screen  # elapsed<left, rate
    piped = subprocess.run(
        [*_child(2.0), "build", str(docs), "-o", str(tmp_path / "b.urna"), "--rebuild"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    progress = [x for x in piped.stderr.splitlines() if x.startswith("embed: ") and "left" in x]
    assert progress and "/2100 chunks" in progress[0], piped.stderr
