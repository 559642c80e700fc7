"""HNSW (search-ann), the chunk graph (search-graph), presets, and malformed index sections."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import PLACEHOLDER, assert_error, in_threads, run
from tests.forge import put_together, take_apart


def _clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((64, dim))
    return centres[rng.integers(0, 64, n)] + 0.35 * rng.standard_normal((n, dim))


def _file(tmp_path: Path, name: str, n: int = 4000, dim: int = 48, **options: object) -> Path:
    path = tmp_path / f"{name}.urna"
    chunks = [
        {
            "text": f"chunk {i} about topic {i % 64}",
            "source_uri": f"doc{i // 10}.txt",
            "byte_start": (i % 10) * 30,
            "byte_end": (i % 10) * 30 + 25,
        }
        for i in range(n)
    ]
    urna.build(
        path,
        chunks,
        embeddings=_clustered(n, dim),
        model="m",
        model_hash=PLACEHOLDER,
        chunker_version="c/1",
        **options,
    )  # type: ignore[arg-type]
    return path


@pytest.mark.parametrize(
    ("preset", "options"),
    [
        ("tiny", {"dtype": "int8", "hnsw": True, "graph": True}),
        ("tiny+copy", {"dtype": "int8", "hnsw": True, "rerank_copy": True}),
        ("hybrid", {"dtype": "float32", "hnsw": True, "graph": True, "bm25": True}),
    ],
)
def test_ann_recall_against_exact(tmp_path: Path, preset: str, options: dict) -> None:
    path = _file(tmp_path, preset, **options)
    rng = np.random.default_rng(1)
    queries = _clustered(100, 48, seed=2) + 0.1 * rng.standard_normal((100, 48))
    with urna.open(path) as corpus:
        assert corpus.hnsw is not None
        assert corpus.manifest["index_type"] == ("hybrid" if options.get("bm25") else "hnsw")
        assert corpus.manifest["rerank_policy"] == "exact"
        found = 0
        for q in queries:
            exact = {h.ordinal for h in corpus.search(q, k=10).hits}
            ann = corpus.search_ann(q, k=10)
            assert ann.index_type == "hnsw" and all(h.reranked for h in ann.hits)
            found += len(exact & {h.ordinal for h in ann.hits})
        recall = found / (10 * len(queries))
        print(f"{preset}: recall@10 = {recall:.3f}")
        assert recall >= 0.95
        precision = ann.hits[0].precision
        assert precision == ("float32" if preset != "tiny" else "int8")


def test_graph_hits_equal_exact_hits(tmp_path: Path) -> None:
    path = _file(tmp_path, "graph", n=2000, hnsw=True, graph=True)
    rng = np.random.default_rng(5)
    with urna.open(path) as corpus:
        assert corpus.graph is not None and corpus.manifest["capabilities_ext"]["graph_present"]
        for q in _clustered(60, 48, seed=9) + 0.1 * rng.standard_normal((60, 48)):
            for hops, ef in ((1, 100), (2, 10), (0, 5)):
                exact = corpus.search(q, k=7)
                graph = corpus.search_graph(q, k=7, hops=hops, ef=ef)
                assert graph.index_type == "graph"
                assert [h.ordinal for h in graph.hits] == [h.ordinal for h in exact.hits]
                assert [h.score for h in graph.hits] == pytest.approx([h.score for h in exact.hits])


def test_fallbacks_and_cli(tmp_path: Path) -> None:
    plain = _file(tmp_path, "plain", n=50)
    q = "[" + ", ".join(["0.1"] * 48) + "]"
    ann = run("search-ann", str(plain), q, "-k", "2")
    assert "index_type:   exact" in ann.stdout and "recall:       1" in ann.stdout
    graph = run("search-graph", str(plain), q, "-k", "2")
    assert "index_type:   exact" in graph.stdout
    indexed = _file(tmp_path, "indexed", n=300, hnsw=True, graph=True)
    ann = run("search-ann", str(indexed), q, "-k", "2", "--ef", "20")
    assert "index_type:   hnsw" in ann.stdout
    assert "recall:       (not computed; rerank guarantees real cosine)" in ann.stdout
    assert ann.stdout.count("reranked=true") == 2 and "precision=float32" in ann.stdout
    graph = run("search-graph", str(indexed), q, "-k", "2", "--hops", "2")
    assert "index_type:   graph" in graph.stdout and graph.stdout.count("reranked=true") == 2
    assert_error(run("search-ann", str(indexed), q, "--ef", "0"), "invalid ef: 0")
    assert_error(run("search-graph", str(indexed), q, "--hops", "-1"), "invalid hops: -1")
    assert_error(run("search-ann", str(indexed), "[1, 2]"), "dimension mismatch")


def _forged(tmp_path: Path, section: int, edit) -> Path:  # type: ignore[no-untyped-def]
    source = _file(tmp_path, f"src{section}", n=200, hnsw=True, graph=True)
    parts = take_apart(source.read_bytes())
    enc, payload = parts.sections[section]
    parts.sections[section] = (enc, edit(payload))
    path = tmp_path / f"forged{section}.urna"
    path.write_bytes(put_together(parts))
    return path


def test_malformed_hnsw_and_graph_are_refused(tmp_path: Path) -> None:
    cases = [
        (7, lambda p: p[: len(p) // 2], "hnsw index"),
        (7, lambda p: p[:60], "hnsw index"),
        (7, lambda p: struct.pack("<I", 3) + p[4:], "unsupported version 3"),
        (12, lambda p: p[:-1], "graph: payload is"),
        (12, lambda p: p[: len(p) - 5 * 1] + b"\xff\xff\xff\x7f" + p[-1:], "graph"),
    ]
    for section, edit, fragment in cases:
        path = _forged(tmp_path, section, edit)
        with pytest.raises(urna.FormatError, match=fragment):
            urna.open(path)
        assert_error(run("stats", str(path)), fragment.split(":")[0])


def test_graph_edge_out_of_range(tmp_path: Path) -> None:
    def edit(payload: bytes) -> bytes:
        n = struct.unpack_from("<Q", payload, 4)[0]
        nnz = struct.unpack_from("<Q", payload, 20 + 8 * n)[0]
        targets_at = 20 + 8 * (n + 1)
        bad = bytearray(payload)
        struct.pack_into("<I", bad, targets_at, n + 5)
        assert nnz > 0
        return bytes(bad)

    path = _forged(tmp_path, 12, edit)
    with pytest.raises(urna.FormatError, match="points at node"):
        urna.open(path)


def test_benchmark_verb(tmp_path: Path) -> None:
    import json

    path = _file(tmp_path, "bench", n=500, hnsw=True, graph=True, bm25=True)
    result = run("benchmark", str(path), "--queries", "30", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    paths = {p["path"] for p in report["paths"]}
    assert paths == {"exact", "hnsw", "graph", "bm25", "hybrid", "hybrid hnsw"}
    assert report["ann_recall"] >= 0.95
    assert 0.5 <= report["hybrid_ann_recall"] <= 1.0  # hybrid by walks against exact hybrid
    table = run("benchmark", str(path), "--queries", "10")
    assert "ann_recall:" in table.stdout and "p99 ms" in table.stdout
    assert_error(run("benchmark", str(path), "--queries", "0"), "--queries", code=2)


def test_indexed_build_is_reproducible(tmp_path: Path) -> None:
    a = _file(tmp_path, "a", n=1500, hnsw=True, graph=True, bm25=True)
    b = _file(tmp_path, "b", n=1500, hnsw=True, graph=True, bm25=True)
    assert a.read_bytes() == b.read_bytes()


def test_concurrent_walks_with_different_ef_answer_as_alone(tmp_path: Path) -> None:
    """A walk's expansion is set on the graph, then the graph is walked: threads asking one
    file with different ef (a server's requests) each get the answer their own query gets
    alone, not a walk at another request's expansion."""
    path = _file(tmp_path, "threads", n=4000, hnsw=True)
    rng = np.random.default_rng(4)
    queries = _clustered(60, 48, seed=5) + 0.1 * rng.standard_normal((60, 48))
    asks = [(q, ef) for q in queries for ef in (4, 300)]
    with urna.open(path) as corpus:

        def answer(q: np.ndarray, ef: int) -> list[tuple[int, float]]:
            return [(h.ordinal, h.score) for h in corpus.search_ann(q, k=4, ef=ef).hits]

        alone = [answer(q, ef) for q, ef in asks]
        assert sum(a != b for a, b in zip(alone[::2], alone[1::2], strict=True)) >= 5
        wrong: list[int] = []

        def ask(first: int) -> None:
            for j in range(len(asks)):
                i = (first + j) % len(asks)
                if answer(*asks[i]) != alone[i]:
                    wrong.append(i)

        in_threads(ask, [i * 31 for i in range(4)])
        assert wrong == []
