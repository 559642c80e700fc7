"""The search box people expect. The query language (``search/syntax.py``): phrases, ``+``
and ``-`` terms and ``field:`` conditions keep exactly the chunks a scan of every stored
text and field keeps, ranked as the query's words rank them, in a file and a 4-shard
collection, in text and hybrid modes; ordinary text with punctuation is never read as
syntax. Grouping by document (``search/grouping.py``): each document once, its best chunk
where the ungrouped ranking put it, and how many more of its chunks matched."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import urna
from tests.conftest import assert_error, run
from tests.stored_vectors import StoredVectors
from urna.build.spec import spec_from_args
from urna.build.writer import build_file, build_folder
from urna.errors import QueryError
from urna.index.tokenize import tokenize
from urna.search.request import Query
from urna.search.syntax import parse_query
from urna.search.words import holds

WORDS = [
    "bees",
    "swarm",
    "queen",
    "hive",
    "honey",
    "comb",
    "spring",
    "winter",
    "sugar",
    "syrup",
    "colony",
    "split",
    "cells",
]
FIELDS = {"year": {"integer": 1}, "audience": {"string": 1}, "tags": {"list": 1}}

ORDINARY = [
    "how do I stop my bees from swarming",
    "e-mail",
    "C++ templates",
    "don't feed in winter",
    "3-4 cups of sugar",
    'what\'s "the" point',
    "a - b",
    '"',
    'say "hi',
    "-5 degrees",
    "+1 for this",
    "http://example.org/bees",
    "12:30 meeting",
    "C:\\temp",
    "note: this",
    "re:",
    "year: 2020",
    "x-ray and t-shirt",
    "--verbose",
    "a+b",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_never_syntax(text: str) -> None:
    parsed = parse_query(text, FIELDS)
    assert parsed.text == text and not parsed.syntax


def test_each_form_reads_as_documented() -> None:
    parsed = parse_query('"queen cells" hive -winter +"sugar syrup" year:>=2020', FIELDS)
    assert parsed.text == "queen cells hive sugar syrup"
    assert parsed.required == ("queen cells", "sugar syrup")
    assert parsed.excluded == ("winter",)
    assert parsed.where == {"year": {"$gte": 2020}}
    ranged = parse_query("bees year:[2019 TO 2021] audience:admins", FIELDS)
    assert ranged.where == {
        "$and": [{"year": {"$gte": 2019, "$lte": 2021}}, {"audience": {"$eq": "admins"}}]
    }
    assert parse_query('bees -"queen cells"', FIELDS).excluded == ("queen cells",)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("-winter", "nothing to search for"),
        ('-"queen cells" -winter', "nothing to search for"),
        ("bees colour:red", "unknown field 'colour'"),
        ("bees colour:red", "year"),  # the fields it does hold are listed
    ],
)
def test_what_cannot_be_searched_says_why(text: str, fragment: str) -> None:
    with pytest.raises(QueryError, match=fragment):
        parse_query(text, FIELDS)


def _notes(folder: Path) -> None:
    rng = random.Random(11)
    folder.mkdir()
    for i in range(40):
        body = [" ".join(rng.choice(WORDS) for _ in range(12)) + "." for _ in range(3)]
        front = ["---", f"year: {2016 + i % 8}", f"audience: {['keepers', 'admins'][i % 2]}"]
        front += [f"tags: [{', '.join(rng.sample(WORDS[:5], 2))}]", "---"]
        text = [*front, f"# Note {i}", "", body[0], "", "## More", "", body[1], "", body[2]]
        (folder / f"n{i:02d}.md").write_text("\n".join(text) + "\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("syntax")
    _notes(root / "notes")
    vectors = StoredVectors()
    file, coll = root / "one.urna", root / "four"
    build_file(spec_from_args([root / "notes"], file), embedder=vectors)
    build_folder(spec_from_args([root / "notes"], coll), shards=4, embedder=vectors)
    return {"file": file, "collection": coll}


QUERIES = [
    ('"queen cells" hive', lambda toks, f: holds(toks, ("queen", "cell"))),
    ("honey comb -winter", lambda toks, f: "winter" not in toks),
    ('bees -"sugar syrup"', lambda toks, f: not holds(toks, ("sugar", "syrup"))),
    ("+colony split spring", lambda toks, f: "coloni" in toks),
    ("swarm audience:admins", lambda toks, f: f.get("audience") == "admins"),
    ("queen year:[2018 TO 2020]", lambda toks, f: 2018 <= f.get("year", 0) <= 2020),
    ("hive tags:bees -queen", lambda toks, f: "bees" in f.get("tags", []) and "queen" not in toks),
]


def _allowed(file: Path, keep: Any) -> set[str]:
    """The chunks a scan of every stored text and field keeps (the file's chunks are the
    collection's: the same ids)."""
    out = set()
    with urna.open(file) as corpus:
        for i in range(corpus.n_chunks):
            chunk = corpus.chunk(i)
            if keep(tokenize(chunk.text), corpus.fields_of(i)):
                out.add(chunk.chunk_id)
    return out


@pytest.mark.parametrize("where", ["file", "collection"])
@pytest.mark.parametrize(("text", "keep"), QUERIES)
def test_syntax_keeps_what_a_scan_keeps(
    built: dict[str, Path], where: str, text: str, keep: Any
) -> None:
    vectors = StoredVectors()
    allowed = _allowed(built["file"], keep)
    with urna.open(built[where]) as corpus:
        assert 0 < len(allowed) < corpus.n_chunks  # the test means something
        parsed = parse_query(text, FIELDS)
        words = corpus.run(Query(text=parsed.text, k=corpus.n_chunks, mode="text"))
        ranked = [(h.chunk_id, h.score) for h in words.hits if h.chunk_id in allowed]
        got = corpus.run(Query(text=text, k=5, mode="text"))
        assert [(h.chunk_id, h.score) for h in got.hits] == ranked[:5]
        assert got.n_searched == len(allowed)
        hybrid = corpus.run(Query(text=text, k=5, mode="hybrid", embedder=vectors))
        assert hybrid.hits and {h.chunk_id for h in hybrid.hits} <= allowed
        assert len(hybrid.hits) == min(5, len(allowed))


def test_a_file_and_a_collection_answer_alike(built: dict[str, Path]) -> None:
    with urna.open(built["file"]) as one, urna.open(built["collection"]) as four:
        for text, _ in QUERIES:
            a = one.run(Query(text=text, k=8, mode="text"))
            b = four.run(Query(text=text, k=8, mode="text"))
            assert [h.chunk_id for h in a.hits] == [h.chunk_id for h in b.hits], text


def test_a_phrase_of_stop_words_constrains_nothing(built: dict[str, Path]) -> None:
    """A quoted run of stop words (a verbose query quoting "they") is left out of what
    chunks must hold, as a search engine leaves a stop word out: the rest still ranks."""
    with urna.open(built["file"]) as corpus:
        plain = corpus.run(Query(text="queen cells they", k=5, mode="text"))
        quoted = corpus.run(Query(text='queen cells "they"', k=5, mode="text"))
        assert quoted.hits and [h.chunk_id for h in quoted.hits] == [h.chunk_id for h in plain.hits]
        assert corpus.run(Query(text='+"the of" queen', k=5, mode="text")).hits


def test_the_cli_reads_the_syntax_and_refuses_what_it_cannot_search(
    built: dict[str, Path],
) -> None:
    found = run("find", str(built["file"]), '"queen cells" -winter', "--mode", "text", "--json")
    assert found.exit_code == 0, found.stderr
    only = run("find", str(built["file"]), "--mode", "text", "--", "-winter")  # -- ends options
    assert_error(only, "nothing to search")
    assert_error(run("find", str(built["file"]), "bees colour:red"), "unknown field 'colour'")


@pytest.mark.parametrize("where", ["file", "collection"])
@pytest.mark.parametrize("mode", ["text", "hybrid"])
def test_grouped_results_hold_each_document_once(
    built: dict[str, Path], where: str, mode: str
) -> None:
    vectors = StoredVectors()
    with urna.open(built[where]) as corpus:
        asked = Query(text="queen cells swarm", k=6, mode=mode, embedder=vectors)
        got = corpus.run(replace(asked, group="document"))
        deep = corpus.run(replace(asked, k=24)).hits  # the depth grouping reads first: 4k
    firsts: dict[str, Any] = {}
    for hit in deep:
        firsts.setdefault(hit.source_uri, hit)
    expected = list(firsts.values())[:6]
    assert [h.chunk_id for h in got.hits] == [h.chunk_id for h in expected]
    assert [h.rank for h in got.hits] == list(range(1, 7))
    for hit in got.hits:
        assert hit.more == sum(h.source_uri == hit.source_uri for h in deep) - 1
    assert len({h.source_uri for h in got.hits}) == len(got.hits) == 6
    assert "grouped by document" in got.note


def test_group_reads_deeper_until_it_has_k_documents(built: dict[str, Path]) -> None:
    with urna.open(built["file"]) as corpus:
        n_docs = len({corpus.chunk(i).source_uri for i in range(corpus.n_chunks)})
        got = corpus.run(Query(text="bees", k=n_docs, mode="text", group="document"))
        plain = corpus.run(Query(text="bees", k=corpus.n_chunks, mode="text"))
    matching = {h.source_uri for h in plain.hits}
    assert {h.source_uri for h in got.hits} == matching
    assert sum(h.more or 0 for h in got.hits) + len(got.hits) == len(plain.hits)


@pytest.mark.parametrize("where", ["file", "collection"])
def test_facet_counts_equal_a_count_of_every_matching_chunk(
    built: dict[str, Path], where: str
) -> None:
    text = "queen swarm -winter"
    allowed = _allowed(built["file"], lambda toks, f: "winter" not in toks)
    with urna.open(built["file"]) as file:
        every = file.run(Query(text="queen swarm", k=file.n_chunks, mode="text")).hits
        matching = [h for h in every if h.chunk_id in allowed]
        by_id = {file.chunk(i).chunk_id: file.fields_of(i) for i in range(file.n_chunks)}
    expected: dict[str, Counter[Any]] = {
        "audience": Counter(),
        "tags": Counter(),
        "folder": Counter(),
    }
    for hit in matching:
        fields = by_id[hit.chunk_id]
        expected["audience"][fields["audience"]] += 1
        expected["tags"].update(fields["tags"])
        expected["folder"][hit.source_uri.rsplit("/", 1)[0]] += 1
    with urna.open(built[where]) as corpus:
        got = corpus.run(Query(text=text, k=3, mode="text", facets=("audience", "tags", "folder")))
        assert got.facets is not None
        assert got.facets["over"] == "every matching chunk"
        assert got.facets["chunks"] == len(matching)
        for name, counts in expected.items():
            assert {v["value"]: v["count"] for v in got.facets["fields"][name]} == dict(counts)
        hybrid = corpus.run(
            Query(text=text, k=3, mode="hybrid", facets="audience", embedder=StoredVectors())
        )
        assert hybrid.facets is not None and hybrid.facets["over"] == "the ranked candidate pool"
        pooled = sum(v["count"] for v in hybrid.facets["fields"]["audience"])
        assert pooled == hybrid.facets["chunks"] >= len(hybrid.hits)
        with pytest.raises(QueryError, match="unknown facet field 'colour'"):
            corpus.run(Query(text=text, mode="text", facets="colour"))


def test_a_typo_is_read_as_the_word_the_corpus_holds(built: dict[str, Path]) -> None:
    with urna.open(built["file"]) as corpus:
        right = corpus.run(Query(text="colony split", k=5, mode="text"))
        typed = corpus.run(Query(text="colonny split", k=5, mode="text"))
        assert [h.chunk_id for h in typed.hits] == [h.chunk_id for h in right.hits]
        assert "typos read: colonni as coloni" in typed.note
        as_typed = corpus.run(Query(text="colonny split", k=5, mode="text", typos=False))
        assert as_typed.terms == ["colonni", "split"] and "typos" not in as_typed.note
        # Never inside a phrase, never a word with digits, never a word under 5 letters.
        assert corpus.run(Query(text='"colonny split" bees', k=5, mode="text")).hits == []
        assert corpus.run(Query(text="c0lony split", k=5, mode="text")).terms[0] == "c0loni"
        assert corpus.run(Query(text="hivv split", k=5, mode="text")).terms[0] == "hivv"
        # Hybrid: the model embeds the query as typed and as respelt with the corpus's word.
        seen = Recording()
        corpus.run(Query(text="Colonny split!", k=5, mode="hybrid", embedder=seen))
        assert seen.texts == ["Colonny split!", "colony split!"]
        seen.texts.clear()
        corpus.run(Query(text="colonny split", k=5, mode="vector", embedder=seen))
        assert seen.texts == ["colonny split"]


def test_a_file_and_a_collection_respell_a_typo_alike(tmp_path: Path) -> None:
    """A stem written several ways (``swarms``, ``swarming``, ``swarmed``) is respelt from the
    chunk of smallest id, so a file and a 4-shard collection of the same chunks embed the
    same respelt query and answer alike."""
    forms = ["swarms", "swarming", "swarmed", "swarm"]
    (tmp_path / "notes").mkdir()
    for i in range(16):
        text = f"# Note {i}\n\nThe hive {forms[i % 4]} in spring, {'honey ' * (i % 5)}queen.\n"
        (tmp_path / "notes" / f"n{i:02d}.md").write_text(text)
    file, coll = tmp_path / "one.urna", tmp_path / "four"
    build_file(spec_from_args([tmp_path / "notes"], file), embedder=StoredVectors())
    build_folder(spec_from_args([tmp_path / "notes"], coll), shards=4, embedder=StoredVectors())
    seen = {}
    for name, path in (("file", file), ("collection", coll)):
        with urna.open(path) as corpus:
            recording = Recording()
            hits = corpus.run(Query(text="swsrm hive", k=8, mode="hybrid", embedder=recording))
            seen[name] = (recording.texts, [h.chunk_id for h in hits.hits])
    assert seen["file"] == seen["collection"]
    assert seen["file"][0][0] == "swsrm hive" and seen["file"][0][1] in {
        f"{form} hive" for form in forms
    }


class Recording(StoredVectors):
    """StoredVectors that remember what they were asked to embed."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts.extend(texts)
        return super().embed(texts)


def test_two_corpora_answer_as_one_collection_of_both(tmp_path: Path) -> None:
    """Two files of one model searched as one give the ids, order and scores of one
    collection built from both sources, in every mode, filtered or not."""
    from urna.search.several import Several

    rng = random.Random(5)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        for i in range(12):
            words = " ".join(rng.choice(WORDS) for _ in range(14))
            (tmp_path / name / f"{name}{i:02d}.md").write_text(
                f"---\nyear: {2018 + i % 4}\n---\n# {name} {i}\n\n{words}.\n"
            )
    vectors = StoredVectors()
    files = {}
    for name in ("a", "b"):
        files[name] = tmp_path / f"{name}.urna"
        build_file(spec_from_args([tmp_path / name], files[name]), embedder=vectors)
    both = tmp_path / "both"
    build_folder(spec_from_args([tmp_path / "a", tmp_path / "b"], both), shards=3, embedder=vectors)
    opened = {name: urna.open(path) for name, path in files.items()}
    several = Several(opened)
    try:
        with urna.open(both) as one:
            for mode in ("text", "vector", "hybrid"):
                for text in ("queen cells swarm", "honey -winter", "sugar year:>=2020"):
                    asked = Query(text=text, k=7, mode=mode, embedder=vectors)
                    got, want = several.run(asked).hits, one.run(asked).hits
                    assert [h.chunk_id for h in got] == [h.chunk_id for h in want], (mode, text)
                    assert all(
                        abs(a.score - b.score) <= 1e-6 for a, b in zip(got, want, strict=True)
                    )
                    assert all(h.corpus == h.source_uri.split("/")[0] for h in got)
        home = tmp_path / "home"
        home.mkdir()
        for name, path in files.items():
            (home / f"{name}.urna").write_bytes(path.read_bytes())
        with pytest.MonkeyPatch.context() as env:
            env.setenv("URNA_HOME", str(home))
            found = run("find", "-l", "a", "-l", "b", "queen cells", "--mode", "text", "--json")
            assert found.exit_code == 0, found.stderr
            named = json.loads(found.stdout)
            with urna.open(both) as one:
                want = one.run(Query(text="queen cells", k=10, mode="text")).hits
            assert [h["chunk"] for h in named] == [h.chunk_id for h in want]
            assert {h["corpus"] for h in named} <= {"a", "b"}
            assert_error(run("stats", "-l", "a,b"), "", code=2)
    finally:
        several.close()
        for corpus in opened.values():
            corpus.close()


def test_corpora_of_two_models_are_fused_by_calibrated_confidence(tmp_path: Path) -> None:
    """Two real models (MiniLM and its static distillation): each corpus answers with its own
    model, exactly as alone, and the hits are fused by calibrated confidence; text mode
    stays one BM25 over both; a query vector, which fits one model, is refused."""
    from urna.search.several import Several

    rng = random.Random(8)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        for i in range(10):
            words = " ".join(rng.choice(WORDS) for _ in range(14))
            (tmp_path / name / f"{name}{i:02d}.md").write_text(f"# {name} {i}\n\n{words}.\n")
    files = {"a": tmp_path / "a.urna", "b": tmp_path / "b.urna"}
    for name, model in (("a", "minilm"), ("b", "minilm-static")):
        built = run("build", str(tmp_path / name), "-o", str(files[name]), "--model", model)
        assert built.exit_code == 0, built.stderr
    opened = {name: urna.open(path) for name, path in files.items()}
    both = tmp_path / "both.urna"
    build_file(spec_from_args([tmp_path / "a", tmp_path / "b"], both), embedder=StoredVectors())
    try:
        with Several(opened) as several, urna.open(both) as words:
            for mode in ("hybrid", "vector"):
                asked = Query(text="queen cells in the hive", k=6, mode=mode, facets="folder")
                got = several.run(asked)
                assert "different models" in got.note and got.recall is None
                alone = {n: c.run(replace(asked, facets=())).hits for n, c in opened.items()}
                for name, hits in alone.items():
                    mine = [h for h in got.hits if h.corpus == name]
                    assert [h.chunk_id for h in mine] == [h.chunk_id for h in hits[: len(mine)]]
                want = sorted(
                    (min(1.0, max(0.0, h.score)) if mode == "vector" else h.score, n, i)
                    for n, hits in alone.items()
                    for i, h in enumerate(hits)
                )
                assert [h.score for h in got.hits] == pytest.approx(
                    sorted((w[0] for w in want), reverse=True)[:6]
                )
                assert [h.rank for h in got.hits] == list(range(1, 7))
                counted = {v["value"]: v["count"] for v in got.facets["fields"]["folder"]}
                assert sum(counted.values()) == got.facets["chunks"]
            text = Query(text="queen cells", k=8, mode="text")
            got_text, want_text = several.run(text).hits, words.run(text).hits
            assert [(h.source_uri, h.text) for h in got_text] == [
                (h.source_uri, h.text) for h in want_text
            ]
            assert [h.score for h in got_text] == pytest.approx([h.score for h in want_text])
            grouped = several.run(Query(text="honey comb", k=4, group="document"))
            assert len({h.source_uri for h in grouped.hits}) == len(grouped.hits) == 4
            with pytest.raises(QueryError, match="fits one model"):
                several.run(Query(vector=[1.0] * 384, method="exact"))
    finally:
        for corpus in opened.values():
            corpus.close()


def test_highlights_mark_exactly_the_words_that_read_as_the_terms(built: dict[str, Path]) -> None:
    with urna.open(built["collection"]) as corpus:
        result = corpus.run(Query(text="swarming queens sugar syrups", k=8, mode="text"))
    terms = set(result.terms)
    assert result.hits
    for hit in result.hits:
        data = hit.text.encode("utf-8")
        expected = []
        for match in re.finditer(r"\w+", hit.text):
            if terms & set(tokenize(match.group(0))):
                start = len(hit.text[: match.start()].encode("utf-8"))
                expected.append([start, start + len(match.group(0).encode("utf-8"))])
        assert hit.highlights == expected
        assert all(data[a:b].decode() for a, b in hit.highlights)
    vector = corpus_vector_hits(built)
    assert all(h.highlights is None for h in vector)


def corpus_vector_hits(built: dict[str, Path]) -> list[Any]:
    with urna.open(built["file"]) as corpus:
        return corpus.run(Query(method="exact", vector=[0.5] * 8, k=3)).hits


def test_the_snippet_centres_on_the_highlights_and_shows_them() -> None:
    """Words that merely start as a term does ("beef" for "bee") do not draw the snippet;
    the words the tokenizer reads as the term do, through Markdown markup taken out."""
    from urna.search.highlights import highlights
    from urna.search.snippet import around

    text = "Beef stew and beef broth. " * 20 + "Our **bees** swarm; [bees](https://x.org) fly."
    marks = highlights(text, ["bee"], tokenize)
    shown, spans = around(text, "notes.md", marks, ["bee"])
    assert shown.startswith("… ") and "bees swarm" in shown and "**" not in shown
    assert [shown[a:b] for a, b in spans] == ["bees", "bees"]
    plain, none = around(text, "notes.txt", (), ["bee"])
    assert plain.startswith("Beef") and plain[none[0][0] : none[0][1]] == "Beef"
