"""schemathesis against a real `urna serve` over real HTTP (slow tier): every operation the
OpenAPI document describes, positive and negative cases, every check: no 5xx, no response
that breaks the documented contract."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.server_helpers import Server

pytestmark = pytest.mark.slow


def test_schemathesis_finds_no_failure(tmp_path: Path) -> None:
    st = shutil.which("st", path=str(Path(sys.executable).parent)) or shutil.which("st")
    if st is None:
        pytest.skip("needs schemathesis (the dev extra)")
    texts = [
        "Beavers build dams on rivers.",
        "Aardvarks sleep in the afternoon.",
        "Whales sing songs in the ocean.",
    ]
    path = tmp_path / "animals.urna"
    urna.build(
        path,
        [
            {
                "text": t,
                "source_uri": f"{i}.md",
                "byte_start": 0,
                "byte_end": len(t),
                "section_path": "Guide / Animals",
            }
            for i, t in enumerate(texts)
        ],
        embeddings=np.eye(8)[:3],
        model="m",
        model_hash="sha256:" + "0" * 64,
        chunker_version="c/1",
        bm25=True,
    )
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
