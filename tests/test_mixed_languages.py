"""One corpus of documents in several languages (``--lang auto``, ``index/mixed.py``): each
document keeps the language it declares (front matter ``lang:``) or is given the one
detected in its text, stored in its ``lang`` field; BM25 reads each chunk in it, and a
query in the language its stop words show (else in all the corpus holds). A file, a
collection and its update read alike, and ``validate`` rebuilds the index from the texts
and their languages."""

from __future__ import annotations

from pathlib import Path

import urna
from tests.conftest import assert_error, run
from tests.stored_vectors import StoredVectors
from urna.build.spec import spec_from_args
from urna.build.writer import build_file, build_folder
from urna.index.languages import checked
from urna.index.mixed import MixedQuery, analysis_of, pooled, query_language
from urna.index.tokenize import PER_DOCUMENT, language_of, tokenizer_name
from urna.search.request import Query

PAGES = {
    "bienen.md": "# Bienenhaltung\n\nDie Bienen schwärmen im Frühling, wenn das Volk zu groß "
    "geworden ist. Der Imker kann das Schwärmen verhindern, indem er dem Volk mehr Platz "
    "gibt und die Weiselzellen entfernt.\n",
    "abeilles.md": "# Apiculture\n\nLes abeilles essaiment au printemps lorsque la colonie "
    "devient trop grande. L'apiculteur peut empêcher l'essaimage en donnant plus d'espace "
    "à la colonie et en retirant les cellules royales.\n",
    "bees.md": "# Beekeeping\n\nBees swarm in spring when the colony grows too large. The "
    "beekeeper can prevent swarming by giving the colony more room and removing the queen "
    "cells.\n",
    # declared: too short for a detector to be sure, and said in a regional form
    "katze.md": "---\nlang: de-DE\n---\n# Katze\n\nDie Katzen schlafen, die Hunde bellen.\n",
}


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


def test_a_query_is_read_in_the_language_its_stop_words_show() -> None:
    langs = ("de", "en", "fr")
    assert query_language("wie verhindert man das Schwärmen", langs) == "de"
    assert query_language("how do I stop swarming", langs) == "en"
    assert query_language("comment empêcher l'essaimage des abeilles", langs) == "fr"
    assert query_language("Schwärmen Bienen", langs) is None  # keywords: no stop word
    reading = MixedQuery(langs)
    assert reading.reading("Schwärmen") == langs and reading.note("Schwärmen").endswith("fr")
    assert reading("wie verhindert man das Schwärmen") == ["verhindert", "schwarm"]
    assert pooled([["a", "b", "b"], ["b", "c"], ["b", "b", "b"]]) == ["a", "b", "b", "c", "b"]
    assert [analysis_of(v) for v in ("de-DE", "FR_ca", "pl", None, 3, "ja")] == [
        "de",
        "fr",
        "en",
        "en",
        "en",
        "ja",
    ]
    assert tokenizer_name("auto") == PER_DOCUMENT and language_of(PER_DOCUMENT) == "auto"


def test_a_mixed_corpus_reads_each_document_in_its_language(tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    vectors = StoredVectors()
    file, coll = tmp_path / "mixed.urna", tmp_path / "mixed"
    build_file(spec_from_args([docs], file, lang="auto"), embedder=vectors)
    build_folder(spec_from_args([docs], coll, lang="auto"), shards=2, embedder=vectors)
    asked = {
        "Wie verhindert man das Schwärmen der Bienen": ("docs/bienen.md", "words read as de"),
        "comment empêcher l'essaimage des abeilles": ("docs/abeilles.md", "words read as fr"),
        "how do I stop bees from swarming": ("docs/bees.md", "words read as en"),
        "Schwärmen": ("docs/bienen.md", "words read in de, en, fr"),
    }
    with urna.open(file) as one, urna.open(coll) as two:
        for text, (page, note) in asked.items():
            got = one.run(Query(text=text, k=2, mode="text"))
            assert got.hits[0].source_uri == page and note in got.note, (text, got.note)
            assert got.hits[0].highlights  # the chunk's words, read in its language
            same = two.run(Query(text=text, k=2, mode="text"))
            assert [h.chunk_id for h in same.hits] == [h.chunk_id for h in got.hits]
        every = one.run(Query(text="Bienen abeilles bees Katzen", k=4, mode="text"))
        stored = {h.source_uri: h.metadata["lang"] for h in every.hits}
        assert stored == {  # detected, and declared as the page says it
            "docs/bienen.md": "de",
            "docs/abeilles.md": "fr",
            "docs/bees.md": "en",
            "docs/katze.md": "de-DE",
        }
        assert one.run(Query(text="abeilles", k=3, mode="text", where={"lang": "fr"})).hits
        told = one.run(Query(text="Schwärmen", k=2, mode="text", lang="DE"))  # asked, not guessed
        assert "words read as de" in told.note and told.hits[0].source_uri == "docs/bienen.md"
        assert told.terms == ["schwarm"]
        phrase = one.run(Query(text='"die Katzen schlafen"', k=3, mode="text"))
        assert [h.source_uri for h in phrase.hits] == ["docs/katze.md"]
        assert not one.run(Query(text='"Katzen bellen"', k=3, mode="text")).hits
    checked = run("validate", str(file))
    assert checked.exit_code == 0 and "all checks passed" in checked.stdout, checked.stdout
    # An update: the new page is read in its language, the others as they were.
    (docs / "honig.md").write_text(
        "# Honig\n\nDer Honig wird im Sommer geerntet, wenn die Waben verdeckelt sind.\n",
        encoding="utf-8",
    )
    build_folder(spec_from_args([docs], coll, lang="auto"), shards=2, embedder=vectors)
    with urna.open(coll) as two:
        hits = two.run(Query(text="wann erntet man den Honig", k=2, mode="text")).hits
        assert hits[0].source_uri == "docs/honig.md"


def test_an_english_build_keeps_its_recipe(tmp_path: Path) -> None:
    """Without --lang auto a declared ``lang`` is a field like any other: the English
    recipe (version 3) and its answers do not move."""
    docs = _docs(tmp_path)
    file = tmp_path / "en.urna"
    build_file(spec_from_args([docs], file), embedder=StoredVectors())
    with urna.open(file) as one:
        got = one.run(Query(text="Schwärmen", k=2, mode="text"))
        assert "words read" not in got.note
        assert one.facts.tokenizer == tokenizer_name("en")  # type: ignore[attr-defined]


def test_a_query_language_is_checked() -> None:
    import pytest

    from urna.errors import QueryError

    with pytest.raises(QueryError, match="invalid lang 'xx'"):
        Query(text="bees", lang="xx")
    assert Query(text="bees", lang=" Fr ").lang == "fr"


def test_auto_is_a_language_choice(tmp_path: Path) -> None:
    assert checked(" AUTO ") == "auto"
    docs = _docs(tmp_path)
    said = run("build", str(docs), "-o", str(tmp_path / "x.urna"), "--lang", "auto", "--dry-run")
    assert said.exit_code == 0, said.stderr
    build_file(spec_from_args([docs], tmp_path / "y.urna", lang="auto"), embedder=StoredVectors())
    asked = run("find", str(tmp_path / "y.urna"), "bees", "--lang", "xx", "--mode", "text")
    assert_error(asked, "invalid lang 'xx'")
