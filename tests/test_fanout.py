"""A collection's shards asked in parallel threads answer exactly as when asked one after
another: the same hits, scores, per-method ranks and counts, on every query path (exact,
HNSW, graph, BM25, hybrid, with and without a where-filter)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import urna
from tests.conftest import run
from tests.test_where import WORDS
from urna import Query


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fanout")
    docs = root / "docs"
    docs.mkdir()
    rng = random.Random(3)
    for i in range(120):
        front = json.dumps({"team": ["red", "blue", "green"][i % 3], "n": i})
        body = ". ".join(" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(4))
        (docs / f"d{i:03d}.md").write_text(f"---\n{front}\n---\n# Doc {i}\n\n{body}.\n")
    out = root / "col"
    result = run("build", str(docs), "-o", str(out), "--shards", "4", "--model", "static")
    assert result.exit_code == 0, result.stderr
    return out


def answer(corpus: Any, query: Query) -> list[Any]:
    r = corpus.run(query)
    hits = [
        (h.chunk_id, h.score, h.source_uri, json.dumps(h.to_dict().get("ranks"))) for h in r.hits
    ]
    return [r.index_type, r.n_searched, r.mode, r.candidates, hits]


def test_parallel_threads_answer_as_one_after_another(collection: Path) -> None:
    rng = random.Random(5)
    texts = [" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(12)]
    with urna.open(collection) as corpus:
        assert len(corpus._searcher.shards) == 4
        vectors = [corpus.embedding(i * 5) for i in range(12)]
        queries = [Query(text=t, k=10, mode=m) for t in texts for m in ("text", "hybrid")]
        queries += [Query(text=t, k=7, mode="hybrid", where={"team": "red"}) for t in texts]
        queries += [Query(vector=v, k=10, method=m) for v in vectors for m in ("exact", "ann")]
        queries += [Query(vector=v, k=5, method="graph", hops=1) for v in vectors[:4]]
        answers = {}
        for policy in ("never", "always"):
            corpus._searcher.threads = policy
            answers[policy] = [answer(corpus, q) for q in queries]
    assert answers["always"] == answers["never"]
    assert any(a[4] for a in answers["never"])  # the queries found something
