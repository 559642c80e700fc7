"""The GPU check (``benchmarks/gpu_check.py``) runs end to end where there is no GPU: the
CPU in bfloat16 stands in for the device under test, against the CPU in float32."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED, bf16_computes, needs_models

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"


@pytest.mark.slow
@needs_models
@bf16_computes
def test_the_gpu_check_compares_two_builds_and_their_answers(tmp_path: Path) -> None:
    if not (SHARED / "data" / "scifact").is_dir():
        pytest.skip("needs ../shared/data/scifact")
    out = tmp_path / "check.json"
    args = ["--device", "cpu", "--precision", "bfloat16", "--records", "40", "--queries", "4"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--shards", "2", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["device_recorded"]["embed_precision"] == "bfloat16"
    assert 0.9995 <= report["min_cosine"] <= 1.0 and report["top10_overlap"] >= 0.9
    assert set(report["embed_chunks_per_s"]) == {
        "embed on cpu", "embed on the CPU, float32", "embed on the CPU, its default",
    }  # fmt: skip
    assert all(rate > 0 for rate in report["embed_chunks_per_s"].values())
    refused = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--min-cosine", "1.01"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert refused.returncode == 1 and '"passed": false' in refused.stdout
