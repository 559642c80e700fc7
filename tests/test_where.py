"""Metadata and where-filters: what each format says about a document is stored typed, and a
filter keeps exactly the chunks a plain Python evaluation of it keeps, ranked as the
unfiltered search ranks them, on a file and on a 3-shard collection, in every mode, through
the library, the CLI, HTTP and MCP."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import random
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import urna
from tests.conftest import assert_error, needs_models, run
from tests.server_helpers import Server, q
from urna.search.request import Query

pytestmark = needs_models
TAGS = ["rust", "python", "search", "ml", "db"]
AUTHORS = ["ada", "grace", "alan", None]
WORDS = [
    "search",
    "index",
    "vector",
    "citation",
    "shard",
    "filter",
    "python",
    "rust",
    "ranking",
    "metadata",
]


def write_corpus(folder: Path) -> None:
    rng = random.Random(7)
    docs = folder / "docs"
    (docs / "notes").mkdir(parents=True)
    for i in range(24):
        fm: list[str] = ["---", f"year: {2014 + i % 10}", f"score: {round(rng.uniform(0, 5), 2)}"]
        fm.append(f"draft: {'true' if i % 3 == 0 else 'false'}")
        fm.append(f"published: {dt.date(2015 + i % 9, 1 + i % 12, 1 + i % 27).isoformat()}")
        fm.append(f"tags: [{', '.join(rng.sample(TAGS, 1 + i % 3))}]")
        author = AUTHORS[i % len(AUTHORS)]
        if author:
            fm.append(f"author: {author}")
        fm.append("---")
        body = " ".join(rng.choice(WORDS) for _ in range(30))
        place = docs / "notes" if i % 2 else docs
        text = "\n".join([*fm, "", f"# Note {i}", "", body, "", "## More", "", body[::-1]])
        (place / f"note-{i:02d}.md").write_text(text + "\n")
    (docs / "taxes.md").write_text("# Taxes\n\nmoney and taxes and a search index\n")
    with (docs / "records.jsonl").open("w") as out:
        for i in range(12):
            record = {"id": f"r{i}", "text": " ".join(rng.choice(WORDS) for _ in range(20)),
                      "year": 2018 + i % 5, "lang": ["en", "de", "fr"][i % 3],
                      "tags": rng.sample(TAGS, 2), "when": f"2021-0{1 + i % 9}-15"}  # fmt: skip
            out.write(json.dumps(record) + "\n")
    rows = ["id,name,price,qty,when"]
    rows += [f"c{i},item {rng.choice(WORDS)},{i * 1.5},{i},2020-0{1 + i % 9}-0{1 + i % 9}"
             for i in range(8)]  # fmt: skip
    (docs / "table.csv").write_text("\n".join(rows) + "\n")
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("A paper on search")
    pdf.set_author("grace")
    pdf.set_creation_date(dt.datetime(2019, 5, 4, 12, 0, tzinfo=dt.UTC))
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 10, "vector search and citation of shards in a paper")
    pdf.output(str(docs / "paper.pdf"))
    import docx

    document = docx.Document()
    document.core_properties.title = "Shard notes"
    document.core_properties.author = "alan"
    document.core_properties.created = dt.datetime(2022, 3, 1, 9, 30)
    document.add_paragraph("ranking metadata filter python rust")
    document.save(str(docs / "memo.docx"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("where")
    write_corpus(root)
    file, folder = root / "one.urna", root / "three"
    for target, extra in ((file, []), (folder, ["--shards", "3"])):
        result = run("build", str(root / "docs"), "-o", str(target), "--model", "minilm-static",
                     *extra)  # fmt: skip
        assert result.exit_code == 0, result.stderr
    return {"root": root, "file": file, "collection": folder}


@pytest.fixture(scope="module", params=["file", "collection"])
def corpus(request: pytest.FixtureRequest, built: dict[str, Path]) -> Any:
    with urna.open(built[request.param]) as opened:
        yield opened


# --- a plain evaluation of a filter, the reference ------------------------------------------


def _value(hit: urna.Hit, name: str) -> tuple[bool, Any]:
    if name == "source":
        return True, hit.source_uri
    if name == "section":
        return bool(hit.section_path), hit.section_path
    if name == "page":
        return hit.page > 0, hit.page
    return name in hit.metadata, hit.metadata.get(name)


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return isinstance(a, str) and isinstance(b, str) and a == b


def _cmp(op: str, a: Any, b: Any) -> bool:
    ok = (isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool)
          and not isinstance(b, bool)) or (isinstance(a, str) and isinstance(b, str))  # fmt: skip
    if not ok:
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def keeps(hit: urna.Hit, f: dict[str, Any]) -> bool:
    for key, cond in f.items():
        if key == "$and":
            ok = all(keeps(hit, c) for c in cond)
        elif key == "$or":
            ok = any(keeps(hit, c) for c in cond)
        elif key == "$not":
            ok = not keeps(hit, cond)
        else:
            present, value = _value(hit, key)
            conds = cond if isinstance(cond, dict) else {"$eq": cond}
            ok = all(_leaf(op, present, value, v) for op, v in conds.items())
        if not ok:
            return False
    return True


def _leaf(op: str, present: bool, value: Any, wanted: Any) -> bool:
    if op == "$exists":
        return present == wanted
    if op == "$ne":
        return not (present and _eq(value, wanted))
    if op == "$nin":
        return not (present and any(_eq(value, w) for w in wanted))
    if not present:
        return False
    if op == "$eq":
        return _eq(value, wanted)
    if op == "$in":
        return any(_eq(value, w) for w in wanted)
    if op == "$contains":
        return isinstance(value, list) and wanted in value
    return _cmp(op, value, wanted)


# --- random filters over the corpus's own fields -----------------------------------------

SCALARS = {
    "year": st.integers(2013, 2025),
    "score": st.floats(0, 5, allow_nan=False).map(lambda x: round(x, 2)),
    "qty": st.integers(0, 8),
    "price": st.floats(0, 12, allow_nan=False),
    "draft": st.booleans(),
    "author": st.sampled_from(["ada", "grace", "alan", "nobody"]),
    "lang": st.sampled_from(["en", "de", "fr", "xx"]),
    "format": st.sampled_from(["markdown", "jsonl", "csv", "pdf", "docx"]),
    "published": st.dates(dt.date(2014, 1, 1), dt.date(2025, 1, 1)).map(str),
    "when": st.dates(dt.date(2019, 1, 1), dt.date(2023, 1, 1)).map(str),
    "page": st.integers(0, 2),
}
ORDERED = ("year", "score", "qty", "price", "published", "when", "page")


@st.composite
def leaf(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["cmp", "eq", "list", "contains", "exists"]))
    if kind == "contains":
        return {"tags": {"$contains": draw(st.sampled_from(TAGS))}}
    if kind == "exists":
        return {draw(st.sampled_from([*SCALARS, "tags"])): {"$exists": draw(st.booleans())}}
    if kind == "cmp":
        name = draw(st.sampled_from(ORDERED))
        op = draw(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]))
        return {name: {op: draw(SCALARS[name])}}
    name = draw(st.sampled_from(list(SCALARS)))
    if kind == "list":
        op = draw(st.sampled_from(["$in", "$nin"]))
        return {name: {op: draw(st.lists(SCALARS[name], min_size=1, max_size=3))}}
    value = draw(SCALARS[name])
    return (
        {name: value}
        if draw(st.booleans())
        else {name: {draw(st.sampled_from(["$eq", "$ne"])): value}}
    )


filters = st.recursive(
    leaf(),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"$and": xs}),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"$or": xs}),
        inner.map(lambda x: {"$not": x}),
    ),
    max_leaves=4,
)
MODES = ["exact", "ann", "text", "vector", "hybrid"]


def _query(corpus: Any, mode: str, k: int, where: Any = None) -> Query:
    if mode in ("exact", "ann"):
        return Query(vector=corpus.embedding(3), k=k, method=mode, where=where)
    n = corpus.n_chunks
    return Query(text="python search shards", k=k, mode=mode, candidates=n, where=where)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(f=filters, mode=st.sampled_from(MODES), k=st.integers(1, 12))
def test_a_filter_keeps_what_a_plain_evaluation_keeps(
    corpus: Any, f: dict, mode: str, k: int
) -> None:
    """Every method's filtered answer is the plain evaluation's answer with the filter
    applied. Hybrid is compared in one pass: its feedback (``search/feedback.py``) comes
    from the chunks the filter keeps, so with feedback it only has to keep the filter."""
    recorded = corpus._searcher.fusion
    if mode == "hybrid":
        corpus._searcher.fusion = replace(recorded, feedback_docs=0)
    try:
        everything = corpus.run(_query(corpus, mode, corpus.n_chunks))
        expected = [h.chunk_id for h in everything.hits if keeps(h, f)][:k]
        try:
            found = corpus.run(_query(corpus, mode, k, f))
        except urna.QueryError as exc:  # a value type no chunk of the field holds
            assert "does not fit" in str(exc), exc
            return
    finally:
        corpus._searcher.fusion = recorded
    assert [h.chunk_id for h in found.hits] == expected
    if not expected and found.n_searched == 0:
        assert "the filter keeps 0 of" in found.note
    if mode == "hybrid":
        assert recorded.feedback_docs == 5
        with_feedback = corpus.run(_query(corpus, mode, k, f))
        assert all(keeps(h, f) for h in with_feedback.hits)
        assert len(with_feedback.hits) == len(expected)


def test_fields_are_typed_and_listed(built: dict[str, Path]) -> None:
    with urna.open(built["file"]) as file, urna.open(built["collection"]) as col:
        fields = file.fields()
        assert fields == col.fields()
    assert fields["year"] == {"integer": 24 * 2 + 12} or "integer" in fields["year"]
    assert set(fields["tags"]) == {"list"} and set(fields["published"]) == {"date"}
    assert set(fields["price"]) == {"float"} and set(fields["qty"]) == {"integer"}
    assert set(fields["draft"]) == {"boolean"} and set(fields["when"]) == {"date"}
    assert {"title", "author", "created", "format", "source", "section", "page"} <= set(fields)
    stats = run("stats", str(built["file"]))
    assert "year: integer" in stats.stdout and "tags: list" in stats.stdout


def test_pdf_and_docx_properties(built: dict[str, Path]) -> None:
    with urna.open(built["file"]) as corpus:
        pdf = corpus.run(Query(text="paper", k=1, mode="text", where={"format": "pdf"})).hits[0]
        memo = corpus.run(Query(text="ranking", k=1, mode="text", where={"format": "docx"})).hits[0]
    assert pdf.metadata["title"] == "A paper on search" and pdf.metadata["author"] == "grace"
    assert pdf.metadata["created"] == "2019-05-04T12:00:00Z"
    assert memo.metadata["title"] == "Shard notes" and memo.metadata["created"].startswith(
        "2022-03-01"
    )


def test_front_matter_is_not_text(built: dict[str, Path]) -> None:
    with urna.open(built["file"]) as corpus:
        for i in range(corpus.n_chunks):
            assert "published:" not in corpus.chunk(i).text


def test_errors_name_the_fields(built: dict[str, Path]) -> None:
    f = str(built["file"])
    message = assert_error(
        run("search-text", f, "x", "--where", '{"colour": "red"}'), "unknown field"
    )
    assert "year" in message and "tags" in message
    assert_error(run("search-text", f, "x", "--where", '{"tags": "rust"}'), "$contains")
    assert_error(run("search-text", f, "x", "--where", '{"year": {"$gt": "abc"}}'), "does not fit")
    assert_error(
        run("search-text", f, "x", "--where", '{"year": {"$near": 1}}'), "unknown operator"
    )
    assert_error(run("search-text", f, "x", "--where", "{not json"), "invalid where filter")
    empty = run("find", f, "python", "--where", '{"year": 1900}')
    assert empty.exit_code == 0 and "filter keeps 0 of" in empty.stdout


def test_source_follows_gitignore_rules(built: dict[str, Path]) -> None:
    f = str(built["file"])
    found = run("find", f, "money", "--source", "taxes*", "--mode", "text", "--json")
    assert found.exit_code == 0, found.stderr
    assert {h["source_uri"] for h in json.loads(found.stdout)} == {"docs/taxes.md"}
    with urna.open(built["file"]) as corpus:
        deep = corpus.run(Query(text="search", k=50, mode="text", source="**/notes/**"))
        assert deep.hits and all(h.source_uri.startswith("docs/notes/") for h in deep.hits)
        none = corpus.run(Query(text="search", k=50, mode="text", source="notes/**"))
        assert not none.hits  # a pattern with a slash is anchored at the root
        records = corpus.run(Query(text="search", k=50, mode="text", source="*.jsonl"))
        assert records.hits and all(
            h.source_uri.startswith("docs/records.jsonl#") for h in records.hits
        )


EVERY_OPERATOR = [
    {"author": "ada"},
    {"author": {"$eq": "grace"}},
    {"author": {"$ne": "grace"}},
    {"year": {"$gt": 2019}},
    {"year": {"$gte": 2020, "$lte": 2021}},
    {"score": {"$lt": 2.5}},
    {"lang": {"$in": ["de", "fr"]}},
    {"lang": {"$nin": ["de"]}},
    {"tags": {"$contains": "rust"}},
    {"author": {"$exists": False}},
    {"published": {"$gte": "2019-01-01"}},
    {"$and": [{"draft": False}, {"year": {"$gte": 2016}}]},
    {"$or": [{"year": {"$gte": 2022}}, {"tags": {"$contains": "db"}}]},
    {"$not": {"format": "markdown"}},
]


def test_cli_http_and_mcp_keep_what_a_plain_evaluation_keeps(built: dict[str, Path]) -> None:
    """Every operator through every shell, on the collection, against the reference."""
    text = "python search"
    with urna.open(built["collection"]) as corpus:
        everything = corpus.run(Query(text=text, k=corpus.n_chunks, mode="text")).hits
        vector = corpus.embedding(5)
        all_vec = corpus.run(Query(vector=vector, k=corpus.n_chunks, method="ann")).hits
    expected = [[h.chunk_id for h in everything if keeps(h, f)][:5] for f in EVERY_OPERATOR]
    assert all(expected) and len({tuple(e) for e in expected}) > 5
    col = str(built["collection"])
    for f, wanted in zip(EVERY_OPERATOR[:5], expected, strict=False):
        cli = run("search-text", col, text, "--mode", "text", "-k", "5", "--where", json.dumps(f),
                  "--json")  # fmt: skip
        assert [h["chunk_id"] for h in json.loads(cli.stdout)["hits"]] == wanted, f
    f = EVERY_OPERATOR[8]
    ann = run("search-ann", col, json.dumps([float(x) for x in vector]), "-k", "5",
              "--where", json.dumps(f), "--json")  # fmt: skip
    assert [h["chunk_id"] for h in json.loads(ann.stdout)["hits"]] == [
        h.chunk_id for h in all_vec if keeps(h, f)
    ][:5]
    server = Server([built["collection"]])
    try:
        for f, wanted in zip(EVERY_OPERATOR, expected, strict=True):
            params = {"db": "three", "q": text, "mode": "text", "limit": "5",
                      "where": json.dumps(f)}  # fmt: skip
            status, body = server.get("/v1/search?" + q(params))
            assert status == 200, body
            assert [h["chunk_id"] for h in body["hits"]] == wanted, f
            posted = _post(server.base + "/v1/search", {**params, "limit": 5, "where": f})
            assert [h["chunk_id"] for h in posted["hits"]] == wanted, f
        assert body["terms"] == ["python", "search"] and "format" in body["hits"][0]["metadata"]
        status, bad = server.get("/v1/search?" + q({**params, "where": '{"colour": 1}'}))
        assert status == 400 and "unknown field" in json.dumps(bad)
        huge = {**params, "limit": 5, "where": {"$or": [{"author": "x" * 1000}] * 300}}
        with pytest.raises(urllib.error.HTTPError) as refused:
            _post(server.base + "/v1/search", huge)
        assert refused.value.code == 413 and b"body_too_large" in refused.value.read()
        if importlib.util.find_spec("mcp") is not None:
            assert _mcp_search(server.base + "/mcp", text, EVERY_OPERATOR) == expected
    finally:
        server.stop()


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _mcp_search(url: str, text: str, filters: list[dict[str, Any]]) -> list[list[str]]:
    import anyio
    from mcp import Client

    out: list[list[str]] = []

    async def main() -> None:
        with anyio.fail_after(120):
            async with Client(url) as client:
                for where in filters:
                    args = {"query": text, "mode": "text", "limit": 5, "where": where}
                    found = await client.call_tool("search", args)
                    body = json.loads(found.content[0].text)
                    out.append([h["chunk_id"] for h in body["hits"]])

    anyio.run(main)
    return out


def test_spec_rules_rename_drop_and_set(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "papers").mkdir(parents=True)
    (docs / "a.md").write_text("---\nwriter: ada\ndraft: true\nformat: slides\n---\n# A\n\nalpha\n")
    (docs / "papers" / "b.md").write_text("---\nwriter: alan\n---\n# B\n\nbeta\n")
    (docs / "bad.md").write_text("---\nkey: [unclosed\n---\n# Bad\n\ngamma\n")
    spec = tmp_path / "urna.toml"
    spec.write_text(
        '[output]\npath = "out.urna"\n[model]\nname = "minilm-static"\n'
        '[[sources]]\npath = "docs"\n'
        '[metadata]\ntitle = "t"\ndrop = ["draft"]\nrename = { writer = "author" }\n'
        '[[metadata.set]]\npath = "papers/"\nfields = { kind = "paper", year = 2021 }\n'
    )
    result = run("build", str(spec))
    assert result.exit_code == 0, result.stderr
    assert "bad.md" in result.stderr and "front matter is not valid YAML" in result.stderr
    with urna.open(tmp_path / "out.urna") as corpus:
        fields = corpus.fields()
        hits = corpus.run(Query(vector=corpus.embedding(0), k=10, method="exact")).hits
    assert "draft" not in fields and "writer" not in fields and fields["kind"] == {"string": 1}
    by_source = {h.source_uri: h.metadata for h in hits}
    assert by_source["docs/a.md"] == {"author": "ada", "format": "markdown"}
    assert by_source["docs/papers/b.md"] == {
        "author": "alan", "format": "markdown", "kind": "paper", "year": 2021,
    }  # fmt: skip
    bad = run("build", str(docs), "-o", str(tmp_path / "x.urna"), "--model", "minilm-static")
    assert bad.exit_code == 0
    broken = tmp_path / "broken.toml"
    broken.write_text(spec.read_text().replace('path = "papers/"', 'path = "!x"'))
    assert_error(run("build", str(broken)), "metadata.set[0].path")


def test_metadata_from_chunks_jsonl_and_the_library(tmp_path: Path) -> None:
    rows = [
        {"text": f"t{i}", "source_uri": "s.md", "byte_start": i, "byte_end": i + 1,
         "embedding": [1.0, float(i)], "metadata": {"n": i, "day": f"2020-01-0{1 + i}"}}
        for i in range(3)
    ]  # fmt: skip
    source = tmp_path / "c.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "c.urna"
    built = run("build", "--from-jsonl", str(source), "-o", str(out), "--model", "m",
                "--dim", "2")  # fmt: skip
    if built.exit_code != 0:
        pytest.skip(f"build --from-jsonl takes other options here: {built.stderr}")
    with urna.open(out) as corpus:
        assert corpus.fields()["day"] == {"date": 3}
        kept = corpus.search([1.0, 1.0], k=3, where={"day": {"$gt": "2020-01-01"}})
        assert sorted(h.metadata["n"] for h in kept.hits) == [1, 2]
    with pytest.raises(urna.BuildError, match="not a metadata value"):
        urna.build(tmp_path / "bad.urna", [{**rows[0], "metadata": {"x": {"a": 1}}}],
                   model="m", model_hash="sha256:" + "0" * 64, chunker_version="c/1")  # fmt: skip


def test_in_and_nin_lists_are_looked_up_and_capped(tmp_path: Path) -> None:
    """A value is tested against a whole $in or $nin list in one look-up (a list of 10,000
    strings over 300 records answers at once, and as a plain evaluation would), and the
    lists of one filter hold at most MAX_VALUES values, whatever interface sent it (an
    object from MCP or POST is checked as JSON text is)."""
    import numpy as np

    from urna.errors import QueryError
    from urna.search.where import MAX_VALUES

    path = tmp_path / "tags.urna"
    chunks = [
        {
            "text": f"record {i}",
            "source_uri": f"r/{i}.md",
            "byte_start": 0,
            "byte_end": 8,
            "metadata": {"tag": f"v{i}", "n": i, "day": f"2024-01-{1 + i % 28:02d}"},
        }
        for i in range(300)
    ]
    urna.build(
        path,
        chunks,
        embeddings=np.eye(300, 8, dtype=np.float32) + 0.01,
        model="m",
        model_hash="sha256:" + "0" * 64,
        chunker_version="c/1",
    )
    wanted = [f"v{i}" for i in range(0, 300, 3)] + [f"x{i}" for i in range(MAX_VALUES - 100)]
    vector = [1.0] + [0.0] * 7
    with urna.open(path) as corpus:
        for op, keep in (("$in", lambda i: i % 3 == 0), ("$nin", lambda i: i % 3 != 0)):
            hits = corpus.search(vector, k=300, where={"tag": {op: wanted}}).hits
            assert sorted(h.source_uri for h in hits) == sorted(
                f"r/{i}.md" for i in range(300) if keep(i)
            )
        numbers = corpus.search(vector, k=300, where={"n": {"$in": [1, 2.0, True, "3"]}}).hits
        assert sorted(h.source_uri for h in numbers) == ["r/1.md", "r/2.md"]
        days = corpus.search(vector, k=300, where={"day": {"$in": ["2024-01-02"]}}).hits
        assert sorted(h.source_uri for h in days) == sorted(
            f"r/{i}.md" for i in range(300) if 1 + i % 28 == 2
        )
        with pytest.raises(QueryError, match=f"more than {MAX_VALUES} values"):
            corpus.search(vector, k=5, where={"tag": {"$nin": [*wanted, "one", "more"]}})
        split = {"$or": [{"tag": {"$in": wanted}}, {"n": {"$nin": list(range(200))}}]}
        with pytest.raises(QueryError, match=f"more than {MAX_VALUES} values"):
            corpus.search(vector, k=5, where=split)
