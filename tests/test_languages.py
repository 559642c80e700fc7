"""Words read in the corpus's language: ``--lang de`` stems German words with German's
Snowball stemmer and drops German stop words, in the chunks and in the queries alike; the
language is recorded in the BM25 tokenizer's name, so a collection, its updates and its
queries read words the same way. English builds keep version 3, bit for bit (the goldens)."""

from __future__ import annotations

from pathlib import Path

import pytest

import urna
from tests.conftest import assert_error, run
from tests.stored_vectors import StoredVectors
from urna.build.spec import spec_from_args
from urna.build.writer import build_file, build_folder
from urna.index.tokenize import (
    TOKENIZER_VERSION,
    language_of,
    query_tokenizer_for,
    tokenizer_for,
    tokenizer_name,
)
from urna.search.request import Query

PAGES = {
    "hunde.md": "# Hunde\n\nDie Hunde schlafen gern in der Sonne und bellen, wenn der Postbote "
    "kommt.\n",
    "katzen.md": "# Katzen\n\nEine Katze jagt Mäuse im Garten und schläft danach.\n",
    "vögel.md": "# Vögel\n\nDer Vogel singt am Morgen, bevor die Sonne aufgeht.\n",
}


def test_each_language_has_its_own_reading() -> None:
    assert tokenizer_name("en") == tokenizer_name("zh") == TOKENIZER_VERSION
    german = tokenizer_name("de")
    assert german.startswith("urna-bm25-tokens/4 lang=de ") and language_of(german) == "de"
    read = tokenizer_for(german)
    assert read is not None and query_tokenizer_for(german) is read
    assert read("Die Hunde bellten") == ["hund", "bellt"]  # "die": a German stop word
    english = tokenizer_for(TOKENIZER_VERSION)
    assert english is not None and english("Die Hunde bellten") == ["die", "hund", "bellten"]
    assert tokenizer_for("urna-bm25-tokens/4 lang=xx no-stop") is None
    assert tokenizer_for(german.replace("snowball-german", "snowball-english")) is None


def test_a_german_corpus_is_searched_in_german(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text, encoding="utf-8")
    vectors = StoredVectors()
    file, coll, english = tmp_path / "de.urna", tmp_path / "de", tmp_path / "en.urna"
    build_file(spec_from_args([docs], file, lang="de"), embedder=vectors)
    build_folder(spec_from_args([docs], coll, lang="de"), shards=2, embedder=vectors)
    build_file(spec_from_args([docs], english), embedder=vectors)
    asked = Query(text="Hund bellt", k=3, mode="text")
    with urna.open(file) as one, urna.open(coll) as two, urna.open(english) as en:
        got = one.run(asked)
        assert got.terms == ["hund", "bell"]
        assert [h.source_uri for h in got.hits] == ["docs/hunde.md"]
        assert got.hits[0].highlights  # "Hunde" and "bellen" read as the query's words
        assert [h.chunk_id for h in two.run(asked).hits] == [h.chunk_id for h in got.hits]
        assert two.catalog.tokenizer_version == tokenizer_name("de")  # type: ignore[attr-defined]
        as_english = en.run(asked)  # English stemming leaves "bellt" and "bellen" apart
        assert as_english.terms == ["hund", "bellt"]
        assert len(as_english.hits[0].highlights or []) < len(got.hits[0].highlights or [])
        phrase = one.run(Query(text='"Sonne aufgeht"', k=3, mode="text"))
        assert [h.source_uri for h in phrase.hits] == ["docs/vögel.md"]
    # An update keeps the collection's language (its recorded tokenizer).
    (docs / "fisch.md").write_text("# Fische\n\nFische schwimmen im Teich.\n", encoding="utf-8")
    build_folder(spec_from_args([docs], coll, lang="de"), shards=2, embedder=vectors)
    with urna.open(coll) as two:
        hits = two.run(Query(text="Fisch schwimmt", k=3, mode="text")).hits
        assert [h.source_uri for h in hits] == ["docs/fisch.md"]
    assert_error(run("build", str(docs), "-o", str(tmp_path / "x.urna"), "--lang", "xx"),
                 "unknown language 'xx'")  # fmt: skip
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[index]\nlang = "fr"\n\n[[sources]]\npath = "{docs.as_posix()}"\n')
    from urna.build.spec import load_spec

    assert load_spec(spec, output=tmp_path / "fr.urna").lang == "fr"
    spec.write_text(f'[index]\nlang = "klingon"\n\n[[sources]]\npath = "{docs.as_posix()}"\n')
    with pytest.raises(Exception, match="unknown language"):
        load_spec(spec, output=tmp_path / "fr.urna")


def test_a_build_of_german_text_suggests_reading_it_in_german(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text * 3, encoding="utf-8")
    for lang in (None, "de"):
        said: list[str] = []
        spec = spec_from_args([docs], tmp_path / f"{lang}.urna", lang=lang)
        build_file(spec, embedder=StoredVectors(), warn=said.append)
        hints = [m for m in said if "--lang" in m]
        assert len(hints) == (1 if lang is None else 0), said
        assert all(h.startswith("the documents read as German (de); --lang de") for h in hints)


def test_corpora_in_two_languages_are_searched_together(tmp_path: Path) -> None:
    """A German corpus and an English one (one model): each reads the query in its own
    language and the hits are fused; a vector query is one search over both."""
    from urna.search.several import Several

    de, en = tmp_path / "de", tmp_path / "en"
    de.mkdir()
    en.mkdir()
    for name, text in PAGES.items():
        (de / name).write_text(text, encoding="utf-8")
    (en / "dogs.md").write_text("# Dogs\n\nThe dogs barked when the postman came.\n")
    (en / "cats.md").write_text("# Cats\n\nA cat hunts mice in the garden.\n")
    vectors = StoredVectors()
    files = {"de": tmp_path / "de.urna", "en": tmp_path / "en.urna"}
    build_file(spec_from_args([de], files["de"], lang="de"), embedder=vectors)
    build_file(spec_from_args([en], files["en"]), embedder=vectors)
    opened = {name: urna.open(path) for name, path in files.items()}
    try:
        with Several(opened) as both:
            found = both.run(Query(text="Hunde dogs barking", k=4, mode="text"))
            assert "readings" in found.note
            first = {}
            for hit in found.hits:
                first.setdefault(hit.corpus, hit.source_uri)
            assert first == {"de": "de/hunde.md", "en": "en/dogs.md"}
            assert found.hits[0].score >= found.hits[-1].score
            vector = both.run(Query(text="Hunde dogs", k=7, mode="vector", embedder=vectors))
            assert {h.corpus for h in vector.hits} == {"de", "en"} and "readings" not in vector.note
    finally:
        for corpus in opened.values():
            corpus.close()
