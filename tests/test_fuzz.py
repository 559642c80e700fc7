"""The fuzz target's findings stay fixed (every kept input replays cleanly), and a bounded
coverage-guided run finds nothing new (slow tier)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz_open import one_input
from tests.test_hostile_sections import _rich_file

CRASHERS = Path(__file__).parent / "fuzz_crashers"
ROOT = Path(__file__).resolve().parents[1]


def test_kept_fuzz_inputs_replay_cleanly(tmp_path: Path) -> None:
    one_input(_rich_file(tmp_path / "seed.urna").read_bytes())
    kept = sorted(CRASHERS.glob("*"))
    for path in kept:
        if path.name != "README.md":
            one_input(path.read_bytes())


@pytest.mark.slow
def test_bounded_fuzzing_finds_nothing(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    seeds = tmp_path / "corpus"
    seeds.mkdir()
    _rich_file(seeds / "rich.urna")
    for path in CRASHERS.glob("*"):
        if path.name != "README.md":
            shutil.copy(path, seeds / path.name)
    artifacts = tmp_path / "found"
    artifacts.mkdir()
    run = subprocess.run(
        [
            sys.executable, "-m", "tests.fuzz_open", str(seeds),
            "-max_total_time=90", "-timeout=20", "-rss_limit_mb=2048", "-max_len=200000",
            f"-artifact_prefix={artifacts}/",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    found = sorted(p.name for p in artifacts.iterdir())
    assert run.returncode == 0 and not found, (
        f"the fuzzer found {found} in {artifacts} (add them to tests/fuzz_crashers): "
        + run.stderr[-3000:]
    )
