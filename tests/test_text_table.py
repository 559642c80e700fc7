"""A collection's text table (``search/text_table.py``): written by a build and a
compaction, it answers bit for bit as the shards' own postings weighed under the
collection's statistics (and as one file of the same documents); a forged one fails
``validate``, a damaged one or one linked from outside the folder is refused on open, an
update drops it and ``urna compact`` writes it again."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest

import urna
from tests.conftest import assert_error, require_models, run
from tests.test_where import WORDS
from urna import Query
from urna.build import writer
from urna.format import versions
from urna.format.catalog import Catalog
from urna.format.text_table import HEAD, MAGIC, table_name

STATIC = ("--model", "static")


def _docs(folder: Path, n: int, seed: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 40))]
        rare = f"rare{i % 7}" if i % 3 == 0 else ""
        (folder / f"d{i:03d}.md").write_text(f"# Doc {i}\n\n{' '.join(words)} {rare}.\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_models()
    root = tmp_path_factory.mktemp("text-table")
    _docs(root / "docs", 90, seed=4)
    for out, options in (("col", ("--shards", "4")), ("one.urna", ())):
        result = run("build", str(root / "docs"), "-o", str(root / out), *STATIC, *options)
        assert result.exit_code == 0, result.stderr
    return root


@pytest.fixture
def col(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "col"
    shutil.copytree(built / "col", copy)
    return copy


def _table(folder: Path) -> Path:
    tables = list(folder.glob("text-*.bm25"))
    assert len(tables) == 1, tables
    return tables[0]


def _queries() -> list[Query]:
    rng = random.Random(9)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5))) for _ in range(30)]
    texts += ["rare3", "rare1 " + WORDS[0], f"{WORDS[2]} {WORDS[2]} rare5"]
    return [Query(text=t, k=k, mode="text") for t in texts for k in (3, 10)]


def _answer(corpus: Any, query: Query) -> list[tuple[str, bytes]]:
    return [(h.chunk_id, np.float32(h.score).tobytes()) for h in corpus.run(query).hits]


def test_the_table_answers_as_the_shards_weighed_again_and_as_one_file(
    built: Path, col: Path
) -> None:
    with urna.open(col) as table:
        assert table._searcher.postings.table is not None
        with_table = [_answer(table, q) for q in _queries()]
        postings = table._searcher.postings
        assert not postings._kept and not postings._terms  # nothing was weighed at query time
    _table(col).rename(col.parent / "kept-aside.bm25")
    with urna.open(col) as shards, urna.open(built / "one.urna") as one:
        assert shards._searcher.postings.table is None
        assert with_table == [_answer(shards, q) for q in _queries()]
        assert with_table == [_answer(one, q) for q in _queries()]
        assert sum(len(a) for a in with_table) > 200


def _mapped(path: Path) -> bool:
    return str(path) in Path("/proc/self/maps").read_text()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads Linux's /proc")
def test_closing_the_collection_unmaps_its_table(col: Path) -> None:
    table = _table(col).resolve()
    corpus = urna.open(col)
    try:
        assert [_answer(corpus, q) for q in _queries()[:4]]
        assert _mapped(table)
    finally:
        corpus.close()
    assert not _mapped(table)  # while the collection object itself is still alive
    assert corpus._searcher.postings.table is None


def test_validate_refuses_a_forged_table(col: Path) -> None:
    assert run("validate", str(col)).exit_code == 0
    path = _table(col)
    with urna.open(col) as corpus:
        table = corpus._searcher.postings.table
        assert table is not None
        i = table.term_index["rare3"]
        base = np.frombuffer(table.payload, np.uint8).ctypes.data
        offset = HEAD + table.weights.ctypes.data - base + 4 * int(table.indptr[i])
        before = _answer(corpus, Query(text="rare3", k=10, mode="text"))
        del table, base
    # The forger lowers one posting's weight (still a weight the format allows) and writes
    # the payload's hash again: the table opens, and answers otherwise.
    raw = bytearray(path.read_bytes())
    value = np.frombuffer(bytes(raw[offset : offset + 4]), "<f4")[0]
    raw[offset : offset + 4] = np.float32(value * 0.5).tobytes()
    raw[len(MAGIC) + 32 : HEAD] = hashlib.sha256(bytes(raw[HEAD:])).digest()
    path.write_bytes(bytes(raw))
    with urna.open(col) as corpus:
        assert _answer(corpus, Query(text="rare3", k=10, mode="text")) != before
    assert_error(run("validate", str(col)), "its weights are not its shards'")


def _hits(result: Any) -> list[tuple[str, float]]:
    assert result.exit_code == 0, result.stderr
    return [(h["chunk_id"], h["score"]) for h in json.loads(result.stdout)["hits"]]


def test_a_damaged_table_is_ignored_refused_by_validate_and_written_again(
    col: Path, tmp_path: Path
) -> None:
    """The table is derived data: a flipped bit, a link out of the folder or another set of
    files' key leaves every verb answering as without the table (each word weighed from the
    shards: the same bits), ``validate`` refuses it, and ``urna compact`` writes it again."""
    search = ("search-text", str(col), "rare3 " + WORDS[1], "--mode", "text", "--json")
    expected = _hits(run(*search))
    path = _table(col)
    good = path.read_bytes()
    outside = tmp_path / "elsewhere.bm25"
    outside.write_bytes(good)

    def flipped() -> None:
        raw = bytearray(good)
        raw[-5] ^= 0x40
        path.write_bytes(bytes(raw))

    def linked() -> None:
        path.unlink()
        path.symlink_to(outside)

    def rekeyed() -> None:
        raw = bytearray(good)
        raw[len(MAGIC)] ^= 1
        path.write_bytes(bytes(raw))

    for damage, said in ((flipped, "SHA-256"), (linked, "out of its folder"), (rekeyed, "key")):
        damage()
        assert _hits(run(*search)) == expected
        for verb in (("stats", str(col)), ("search-text", str(col), "x", "--mode", "vector")):
            assert run(*verb).exit_code == 0, (damage.__name__, verb)
        assert_error(run("validate", str(col)), said)
        with urna.open(col) as opened:
            assert opened.text_table is None
        path.unlink()
        path.write_bytes(good)
    flipped()
    warned = subprocess.run(
        [sys.executable, "-m", "urna", *search], capture_output=True, text=True, timeout=120
    )
    assert warned.returncode == 0 and "SHA-256" in warned.stderr and "ignored" in warned.stderr
    result = run("compact", str(col))
    assert result.exit_code == 0, result.stderr
    assert path.read_bytes() == good
    assert run("validate", str(col)).exit_code == 0


def test_an_update_drops_the_table_and_compact_writes_it_again(built: Path, col: Path) -> None:
    docs = col.parent / "docs"
    shutil.copytree(built / "docs", docs)
    first = _table(col).name
    (docs / "added.md").write_text("# Added\n\nrare3 arrives late, with words of its own.\n")
    (docs / "d004.md").unlink()
    result = run("build", str(docs), "-o", str(col), *STATIC, "--shards", "4", "--no-merge")
    assert result.exit_code == 0, result.stderr
    assert not list(col.glob("text-*.bm25"))  # a deletion: no table
    with urna.open(col) as updated:
        expected = [_answer(updated, q) for q in _queries()]
    seen: list[bool] = []

    def publish(folder: Path, catalog: Catalog) -> str:  # the table is there before the head
        seen.append((folder / str(table_name(catalog))).is_file())
        return versions.publish(folder, catalog)

    with mock.patch.object(writer, "publish", publish):
        result = run("compact", str(col))
    assert result.exit_code == 0, result.stderr
    assert seen == [True]
    again = _table(col).name
    assert again != first
    with urna.open(col) as compacted:
        assert compacted._searcher.postings.table is not None
        assert [_answer(compacted, q) for q in _queries()] == expected
    _table(col).unlink()  # a collection built before tables: compact writes one
    result = run("compact", str(col))
    assert result.exit_code == 0, result.stderr
    assert _table(col).name == again
