"""schemathesis against a real `urna serve` over real HTTP (slow tier): every operation the
OpenAPI document describes, positive and negative cases, every check: no 5xx, no response
that breaks the documented contract."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server_helpers import Server, text_file

pytestmark = pytest.mark.slow


def test_schemathesis_finds_no_failure(tmp_path: Path) -> None:
    st = shutil.which("st", path=str(Path(sys.executable).parent)) or shutil.which("st")
    if st is None:
        pytest.skip("needs schemathesis (the dev extra)")
    path = text_file(tmp_path / "animals.urna", n=3)
    server = Server([path])
    try:
        run = subprocess.run(
            [st, "run", f"{server.base}/openapi.json", "--checks", "all",
             "--max-examples", "60", "--seed", "20261201", "--workers", "2"],
            cwd=tmp_path, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        alive = server.proc.poll() is None
    finally:
        server.stop()
    assert run.returncode == 0, run.stdout[-4000:]
    assert alive
    assert " passed" in run.stdout and "failures" not in run.stdout.split("SUMMARY")[-1].lower()
