"""Hybrid whose vector side walks HNSW (``vector_index="ann"``, ``--vector-index ann``): an
option for users who trade exactness for speed on large corpora. The answer says so, its
recall against the exact hybrid is what ``urna benchmark`` measures, and a file without an
HNSW index answers exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

import urna
from tests.conftest import run
from tests.stored_vectors import StoredVectors
from urna.build.spec import spec_from_args
from urna.build.writer import build_file
from urna.errors import QueryError
from urna.evaluate.latency import run_benchmark
from urna.search.request import Query

WORDS = "hive queen swarm comb honey nectar pollen brood drone frame smoke wax".split()  # noqa: SIM905


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hybrid-ann")
    docs = root / "docs"
    docs.mkdir()
    for i in range(60):
        words = [WORDS[(i * 7 + j * 5) % len(WORDS)] for j in range(20)]
        (docs / f"n{i:02d}.md").write_text(f"# Note {i}\n\n{' '.join(words)}.\n")
    out = root / "notes.urna"
    build_file(spec_from_args([docs], out, preset="hybrid"), embedder=StoredVectors())
    return out


def test_hybrid_by_walks_says_so_and_finds_what_exact_finds(built: Path) -> None:
    vectors = StoredVectors()
    with urna.open(built) as corpus:
        assert corpus.has_ann_index
        for text in ("queen swarm", "honey comb wax", "brood frame"):
            exact = corpus.run(Query(text=text, k=5, mode="hybrid", embedder=vectors))
            walked = corpus.run(
                Query(text=text, k=5, mode="hybrid", embedder=vectors, vector_index="ann")
            )
            assert "HNSW" in walked.note and "HNSW" not in exact.note
            assert len(walked.hits) == len(exact.hits) == 5
            # A small graph walked with ef 100 reaches every chunk: the same answer.
            assert [h.chunk_id for h in walked.hits] == [h.chunk_id for h in exact.hits]
        report = run_benchmark(corpus, queries=5, k=5)
        assert report.hybrid_ann_recall == 1.0
        assert {p.path for p in report.paths} >= {"hybrid", "hybrid hnsw"}


def test_a_bad_vector_index_is_refused(built: Path) -> None:
    with pytest.raises(QueryError, match="invalid vector_index 'hnsw'"):
        Query(text="bees", vector_index="hnsw")
    asked = run("find", str(built), "queen", "--vector-index", "hnsw")
    assert asked.exit_code == 2 and "--vector-index" in asked.stderr
