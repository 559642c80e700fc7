"""The fuzz target's findings stay fixed (every kept input replays cleanly), and a bounded
coverage-guided run finds nothing new (slow tier)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import urna
from tests.fuzz_open import COLLECTION, collection_seed, one_catalog, one_input
from tests.test_hostile_sections import _rich_file

CRASHERS = Path(__file__).parent / "fuzz_crashers"
ROOT = Path(__file__).resolve().parents[1]


def test_kept_fuzz_inputs_replay_cleanly(tmp_path: Path) -> None:
    one_input(_rich_file(tmp_path / "seed.urna").read_bytes())
    kept = sorted(CRASHERS.glob("*"))
    for path in kept:
        if path.name != "README.md":
            one_input(path.read_bytes())


def test_a_catalog_seed_and_its_mutations_replay_cleanly() -> None:
    seed = collection_seed()
    one_catalog(seed)
    with urna.open(COLLECTION) as col:  # the seed is a real collection: every path runs
        assert col.n_chunks == 12 and col.validate().n_chunks == 12
    for cut in (0, 1, len(seed) // 2, len(seed) - 1):
        one_catalog(seed[:cut])
    one_catalog(seed.replace(b'"buckets":[0,2048]', b'"buckets":[0,4096]'))
    one_catalog(seed.replace(b"shard-0000", b"shard-0001"))


def _fuzz(seeds: Path, found: Path, seconds: int, max_len: int, **env: str) -> None:
    """A bounded atheris run over ``seeds``; what it finds lands in ``found`` and fails."""
    found.mkdir()
    run = subprocess.run(
        [
            sys.executable, "-m", "tests.fuzz_open", str(seeds),
            f"-max_total_time={seconds}", "-timeout=20", "-rss_limit_mb=2048",
            f"-max_len={max_len}", f"-artifact_prefix={found}/",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )  # fmt: skip
    kept = sorted(p.name for p in found.iterdir())
    assert run.returncode == 0 and not kept, (
        f"the fuzzer found {kept} in {found} (add them to tests/fuzz_crashers): "
        + run.stderr[-3000:]
    )


@pytest.mark.slow
def test_bounded_fuzzing_of_catalogs_finds_nothing(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    seeds = tmp_path / "corpus"
    seeds.mkdir()
    (seeds / "catalog.json").write_bytes(collection_seed())
    _fuzz(seeds, tmp_path / "found", 45, 20000, URNA_FUZZ="collection")


@pytest.mark.slow
def test_bounded_fuzzing_finds_nothing(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    seeds = tmp_path / "corpus"
    seeds.mkdir()
    _rich_file(seeds / "rich.urna")
    for path in CRASHERS.glob("*"):
        if path.name != "README.md":
            shutil.copy(path, seeds / path.name)
    _fuzz(seeds, tmp_path / "found", 90, 200000)
