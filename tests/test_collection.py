"""Collections answer exactly as one file holding the same chunks, rebuild only what changed,
and refuse a catalog that does not match its shards."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import assert_error, needs_models, run
from tests.server_helpers import Server, q
from urna.format.catalog import CATALOG, read_catalog
from urna.search.core import Searcher

pytestmark = needs_models
TOPICS = {
    "install": "install the package with pip on linux and mac, then run the quickstart",
    "citations": "a citation names the content hash and the chunk id and resolves to bytes",
    "search": "exact search scores every chunk by cosine and ties keep file order",
    "hybrid": "hybrid search fuses bm25 text scores with vector cosine by calibration",
    "shards": "a collection splits sources into shards by the hash of the source uri",
    "gate": "the model gate compares the model name dimension and hash before a query",
}
QUERIES = [
    "how do I install it on linux",
    "what does a citation resolve to",
    "fusion of bm25 and cosine scores",
    "shards of a collection",
    "model hash check",
    "ties keep file order",
]


def write_docs(folder: Path, n: int = 36) -> None:
    names = list(TOPICS)
    for i in range(n):
        topic = names[i % len(names)]
        other = names[(i * 7 + 3) % len(names)]
        body = [f"# {topic.title()} note {i}", "", f"## Part {i % 4}", ""]
        body += [f"{TOPICS[topic]} (variant {i}).", "", f"See also: {TOPICS[other]}.", ""]
        if i % 5 == 0:
            body += ["## Details", "", " ".join([TOPICS[topic]] * 3), ""]
        (folder / f"{topic}-{i:02d}.md").write_text("\n".join(body))


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("collection")
    docs = root / "docs"
    docs.mkdir()
    write_docs(docs)
    return root


@pytest.fixture(scope="module")
def collection(corpus_dir: Path) -> Path:
    out = corpus_dir / "col"
    result = run("build", str(corpus_dir / "docs"), "-o", str(out), "--shards", "4")
    assert result.exit_code == 0, result.stderr
    return out


def one_file_of(sources: Path, out: Path, *options: str) -> Path:
    """One ordinary file built from the same documents (the real build, its own vectors)."""
    result = run("build", str(sources), "-o", str(out), *options)
    assert result.exit_code == 0, result.stderr
    return out


def same(a: urna.SearchResult, b: urna.SearchResult) -> None:
    """The same chunks in the same order, scores within 1e-6 (ordinals are each one's own)."""
    assert [h.chunk_id for h in a.hits] == [h.chunk_id for h in b.hits]
    assert np.allclose([h.score for h in a.hits], [h.score for h in b.hits], rtol=0, atol=1e-6)


def test_collection_answers_as_one_file(collection: Path, corpus_dir: Path, tmp_path: Path) -> None:
    single = one_file_of(corpus_dir / "docs", tmp_path / "one.urna")
    with urna.open(collection) as col, urna.open(single) as one:
        assert isinstance(col, urna.Collection) and len(col.shards) >= 3
        assert col.n_chunks == one.n_chunks
        for query in QUERIES:
            for mode, fusion in (("text", None), ("vector", None), ("hybrid", "calibrated"),
                                 ("hybrid", "rrf")):  # fmt: skip
                a = col.search_text(query, k=8, mode=mode, fusion=fusion)
                b = one.search_text(query, k=8, mode=mode, fusion=fusion)
                assert a.hits, (query, mode)
                same(a, b)
                for x, y in zip(a.hits, b.hits, strict=True):
                    assert {m: r["rank"] for m, r in x.ranks.items()} == {
                        m: r["rank"] for m, r in y.ranks.items()
                    }
                    for m, r in x.ranks.items():
                        assert r["score"] == pytest.approx(y.ranks[m]["score"], abs=1e-6)
            q = one.embedder().embed([query])[0]
            same(col.search(q, k=8), one.search(q, k=8))
            same(col.search_ann(q, k=5), one.search_ann(q, k=5))
            same(col.search_graph(q, k=5), one.search_graph(q, k=5))
            same(col.search(q, k=4, source="shards-*"), one.search(q, k=4, source="shards-*"))
            same(
                col.search_text(query, k=4, mode="text", section="Search note"),
                one.search_text(query, k=4, mode="text", section="Search note"),
            )
        # Every hit's citation resolves through the catalog to the same chunk.
        for hit in col.search_text(QUERIES[0], k=5, mode="hybrid").hits:
            chunk = col.cite(hit.citation_id)
            assert chunk.text == hit.text and chunk.ordinal == hit.ordinal
            col.verify_source(chunk)


def test_bm25_statistics_are_global(collection: Path) -> None:
    """With per-shard statistics the scores would differ: the two rounds matter."""
    with urna.open(collection) as col:
        query = "bm25 cosine calibration fusion"
        merged = col.search_text(query, k=5, mode="text")
        local = sorted(
            (
                h.score
                for s in col.shards
                for h in Searcher([s]).run(urna.Query(text=query, k=5, mode="text")).hits
            ),
            reverse=True,
        )[:5]
        assert [h.score for h in merged.hits] != pytest.approx(local, abs=1e-6)


def test_verbs_accept_a_collection(collection: Path) -> None:
    for args in (
        ["stats", str(collection)],
        ["inspect", str(collection)],
        ["validate", str(collection)],
        ["benchmark", str(collection), "--queries", "5"],
        ["search-text", str(collection), "install", "--mode", "text"],
        ["ask", str(collection), "what is a citation", "-k", "1"],
        ["retrieve", str(collection), "what is a citation", "-k", "2"],
        ["search", str(collection), json.dumps([0.05] * 384), "-k", "2"],
        ["search-ann", str(collection), json.dumps([0.05] * 384), "-k", "2"],
        ["search-graph", str(collection), json.dumps([0.05] * 384), "-k", "2"],
    ):
        result = run(*args)
        assert result.exit_code == 0, (args, result.stderr)
        assert result.stdout.strip()
    hit = json.loads(run("retrieve", str(collection), "citation", "-k", "1").stdout)
    cited = run("cite", str(collection), hit["citation_id"], "--verify-source")
    assert cited.exit_code == 0, cited.stderr
    assert "source_check: ok" in cited.stdout


def test_an_edit_writes_a_segment_and_keeps_every_file(corpus_dir: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(corpus_dir / "docs", docs)
    out = tmp_path / "col"
    assert run("build", str(docs), "-o", str(out), "--shards", "4").exit_code == 0
    before = {p.name: p.read_bytes() for p in out.glob("*.urna")}
    with urna.open(out) as col:
        hit = col.search_text("install on linux", k=1, mode="text").hits[0]
        old_citation, old_source = hit.citation_id, hit.source_uri
    path = tmp_path / old_source
    path.write_text(path.read_text() + "\nOne more paragraph about installing on BSD.\n")
    result = run("build", str(docs), "-o", str(out), "--no-merge")  # the catalog's 4 shards
    assert result.exit_code == 0, result.stderr
    assert "1 added" not in result.stdout and "0 added, 1 changed, 0 removed" in result.stdout
    assert "embedded:     1" in result.stdout  # the new paragraph only
    after = {p.name: p.read_bytes() for p in out.glob("*.urna")}
    (new,) = set(after) - set(before)
    assert new.startswith("segment-")
    for name in before:
        assert before[name] == after[name]  # no file is rewritten
    catalog, _ = read_catalog(out)
    assert [d[0] for e in catalog.shards for d in e.deleted] == [old_source]
    # The citation given before the edit still resolves: its version is retained.
    cited = run("cite", str(out), old_citation)
    assert cited.exit_code == 0, cited.stderr
    with urna.open(out) as col:
        hit = col.search_text("installing on BSD", k=1, mode="text").hits[0]
        assert hit.source_uri == old_source and "BSD" in col.cite(hit.citation_id).text
    # Copied elsewhere (no embedding cache at all), it updates from its own files.
    moved = tmp_path / "moved"
    shutil.copytree(out, moved)
    path.write_text(path.read_text() + "\nAnd on Windows.\n")
    again = run("build", str(docs), "-o", str(moved))
    assert again.exit_code == 0 and "embedded:     1" in again.stdout, again.stdout


def test_parallel_build_is_byte_identical(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764547200")  # the catalog records its time
    one = tmp_path / "one"
    two = tmp_path / "two"
    assert run("build", str(corpus_dir / "docs"), "-o", str(one), "--shards", "3").exit_code == 0
    result = run("build", str(corpus_dir / "docs"), "-o", str(two), "--shards", "3", "--jobs", "2")
    assert result.exit_code == 0, result.stderr
    a = {p.name: p.read_bytes() for p in one.rglob("*") if p.is_file()}
    b = {p.name: p.read_bytes() for p in two.rglob("*") if p.is_file()}
    assert a == b  # the shards and the catalog


def test_validate_refuses_a_catalog_that_does_not_match(collection: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(collection, broken)
    catalog, _ = read_catalog(broken)
    files = [e.file for e in catalog.shards if e.file]
    (broken / files[0]).unlink()
    assert_error(run("validate", str(broken)), f"names shard {files[0]}, which is missing")
    shutil.copy(collection / files[1], broken / files[0])  # a valid file, but another shard
    message = assert_error(run("validate", str(broken)))
    assert "the catalog says" in message and files[0] in message
    raw = (collection / CATALOG).read_text()
    (broken / CATALOG).write_text(json.dumps(json.loads(raw), indent=1))
    assert_error(run("validate", str(broken)), "canonical")
    (broken / CATALOG).write_text(raw.replace('"n_chunks":', '"n_chunks_":', 1))
    assert_error(run("validate", str(broken)), "catalog")
    (broken / CATALOG).write_text("{")
    assert_error(run("validate", str(broken)), "not valid JSON")


def test_a_folder_without_catalog_is_not_a_collection(tmp_path: Path) -> None:
    assert_error(run("stats", str(tmp_path)), "is a directory")


def test_serve_a_collection_as_one_database(collection: Path) -> None:
    server = Server([collection])
    try:
        assert server.get("/api/list") == (200, {"databases": ["col"]})
        path = "/v1/search?" + q({"db": "col", "q": "install on linux", "limit": "4"})
        status, body = server.get(path)
        assert status == 200 and body["k_returned"] == 4
        with urna.open(collection) as col:
            expected = col.search_text("install on linux", k=4).to_dict()
        assert [h["chunk_id"] for h in body["hits"]] == [h["chunk_id"] for h in expected["hits"]]
        hit = body["hits"][0]
        status, cited = server.get("/v1/cite?" + q({"db": "col", "citation": hit["citation_id"]}))
        assert status == 200 and cited["text"] == hit["text"]
        status, grouped = server.get(
            "/api/search?" + q({"db": "col", "q": "citation", "limit": "3"})
        )
        assert status == 200 and grouped["keyword"] and grouped["semantic"]
        status, info = server.get("/v1/databases/col")
        assert status == 200 and info["collection_version"].startswith("sha256:")
        assert "path" not in info and not any("path" in s for s in info["shards"])
    finally:
        server.stop()


def test_collection_build_errors(corpus_dir: Path, tmp_path: Path) -> None:
    docs = str(corpus_dir / "docs")
    out = str(tmp_path / "c")
    assert run("build", docs, "-o", out, "--jobs", "2").exit_code == 2  # --jobs needs --shards
    assert run("build", docs, "-o", out, "--shards", "0").exit_code == 2
    assert_error(run("build", docs, "-o", out, "--shards", "2", "--ray", "nonsense"), "HOST:PORT")
    assert_error(
        run("build", docs, "-o", out, "--shards", "2", "--ray", "127.0.0.1:1"), "cannot reach"
    )
    (tmp_path / "file").write_text("x")
    assert_error(run("build", docs, "-o", str(tmp_path / "file"), "--shards", "2"), "is a file")
    assert_error(run("serve", str(tmp_path), "--ray", "local"), "exactly one collection folder")


def test_the_overview_counts_only_what_the_catalog_keeps(corpus_dir: Path, tmp_path: Path) -> None:
    from urna.search.overview import overview

    docs = tmp_path / "docs"
    shutil.copytree(corpus_dir / "docs", docs)
    out = tmp_path / "col"
    assert run("build", str(docs), "-o", str(out), "--shards", "4").exit_code == 0
    with urna.open(out) as col:
        every = sorted(set(col.source_uris(col.live_ordinals())))
        assert len(col.live_ordinals()) == col.n_chunks
    removed = every[0]
    (tmp_path / removed).unlink()
    result = run("build", str(docs), "-o", str(out), "--no-merge")  # deletions in the catalog
    assert result.exit_code == 0 and "1 removed" in result.stdout, result.stdout
    with urna.open(out) as col:
        live = col.live_ordinals()
        assert len(live) == col.n_chunks and list(live) == sorted(live)
        kept = set(col.source_uris(live))
        assert kept == set(every) - {removed}
        assert overview("col", col)["documents"] == len(kept)
