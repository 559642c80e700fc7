"""A living collection answers as a fresh build of its sources, after any sequence of adds,
edits and deletes, with segments and deletions present and after compaction; every retained
version stays answerable; a writer killed at any point leaves the previous version whole."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import urna
from tests.conftest import assert_error, needs_models, run
from urna.build.spec import spec_from_args
from urna.build.writer import build_folder, compact_folder
from urna.format.catalog import read_catalog
from urna.format.versions import VERSIONS, describe_versions, retained_files

pytestmark = needs_models
WORDS = [
    "bees",
    "swarm",
    "when",
    "the",
    "hive",
    "is",
    "crowded",
    "and",
    "the",
    "old",
    "queen",
    "leaves",
    "with",
    "half",
    "the",
    "workers",
    "routers",
    "need",
    "firmware",
    "updates",
    "and",
    "a",
    "warranty",
    "covers",
    "the",
    "hardware",
    "for",
    "two",
    "years",
    "compaction",
    "folds",
    "small",
    "segments",
    "into",
    "shards",
    "as",
    "a",
    "tiered",
    "merge",
    "policy",
    "says",
    "citations",
    "name",
    "a",
    "content",
    "hash",
    "and",
    "a",
    "chunk",
    "id",
    "that",
    "anyone",
    "can",
    "check",
]
QUERIES = ["bees and the queen", "router warranty", "merge policy for segments", "citations"]
SPLIT = "\n\n"


def text_of(seed: int) -> str:
    rng = random.Random(seed)
    paras = [" ".join(rng.choices(WORDS, k=rng.randint(8, 40))) for _ in range(rng.randint(1, 3))]
    return f"# Note {seed}{SPLIT}" + SPLIT.join(paras) + "\n"


def build(docs: Path, out: Path, *, merge: bool = True, shards: int = 2) -> None:
    build_folder(spec_from_args([docs], out), shards=shards, merge=merge)


def same_answers(a: urna.Collection, b: urna.Collection) -> None:
    """Every mode: the same ids in the same order, scores within 1e-6."""
    assert a.n_chunks == b.n_chunks
    assert a.fields() == b.fields()  # the live chunks' fields and counts
    embedder = b.embedder()
    for query in QUERIES:
        for mode in ("text", "vector", "hybrid"):
            ra, rb = a.search_text(query, k=6, mode=mode), b.search_text(query, k=6, mode=mode)
            assert [h.chunk_id for h in ra.hits] == [h.chunk_id for h in rb.hits], (query, mode)
            assert np.allclose([h.score for h in ra.hits], [h.score for h in rb.hits], atol=1e-6)
            assert ra.n_searched == rb.n_searched
        vector = embedder.embed([query])[0]
        for method in ("search", "search_graph"):
            ra, rb = getattr(a, method)(vector, k=6), getattr(b, method)(vector, k=6)
            assert [h.chunk_id for h in ra.hits] == [h.chunk_id for h in rb.hits], method
        exact = {h.chunk_id for h in b.search(vector, k=6).hits}
        assert {h.chunk_id for h in a.search_ann(vector, k=6).hits} == exact  # recall 1 here
        kept = {"source": "**/n1*", "where": {"format": "markdown"}}
        ra = a.search_text(query, k=6, mode="text", **kept)  # type: ignore[arg-type]
        rb = b.search_text(query, k=6, mode="text", **kept)  # type: ignore[arg-type]
        assert [h.chunk_id for h in ra.hits] == [h.chunk_id for h in rb.hits]


class LivingCorpus(RuleBasedStateMachine):
    """Random adds, edits and deletes, each followed by an update (merging or not)."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(os.environ["URNA_LIVING_ROOT"]) / f"run-{time.monotonic_ns()}"
        self.docs = self.root / "docs"
        self.out = self.root / "living"
        self.next = 0

    @initialize(n=st.integers(2, 5))
    def first(self, n: int) -> None:
        self.docs.mkdir(parents=True)
        for _ in range(n):
            self._write(self.next)
            self.next += 1
        build(self.docs, self.out)

    def _write(self, seed: int, name: int | None = None) -> None:
        (self.docs / f"n{seed if name is None else name}.md").write_text(text_of(seed))

    def _names(self) -> list[Path]:
        return sorted(self.docs.glob("*.md"))

    @rule(merge=st.booleans())
    def add(self, merge: bool) -> None:
        self._write(self.next)
        self.next += 1
        build(self.docs, self.out, merge=merge)

    @rule(pick=st.integers(0, 100), seed=st.integers(1000, 9999), merge=st.booleans())
    def edit(self, pick: int, seed: int, merge: bool) -> None:
        names = self._names()
        target = names[pick % len(names)]
        target.write_text(target.read_text() + SPLIT + text_of(seed).split(SPLIT, 1)[1])
        build(self.docs, self.out, merge=merge)

    @rule(pick=st.integers(0, 100), merge=st.booleans())
    def delete(self, pick: int, merge: bool) -> None:
        names = self._names()
        if len(names) > 1:
            names[pick % len(names)].unlink()
            build(self.docs, self.out, merge=merge)

    @invariant()
    def answers_as_a_fresh_build(self) -> None:
        if not self.out.exists():
            return
        fresh = self.root / f"fresh-{time.monotonic_ns()}"
        build(self.docs, fresh)
        with urna.open(self.out) as a, urna.open(fresh) as b:
            same_answers(a, b)
        shutil.rmtree(fresh)

    def teardown(self) -> None:
        if self.out.exists():
            compact_folder(self.out)
            fresh = self.root / "fresh-final"
            build(self.docs, fresh)
            with urna.open(self.out) as a, urna.open(fresh) as b:
                same_answers(a, b)
                assert a.validate().n_chunks == b.n_chunks
                assert not a.catalog.segments
                assert {e.content_hash for e in a.catalog.files} == {
                    e.content_hash for e in b.catalog.files
                }  # compacted: the very shards a fresh build writes
        shutil.rmtree(self.root, ignore_errors=True)


def test_living_corpus_answers_as_a_fresh_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("URNA_LIVING_ROOT", str(tmp_path))
    machine = LivingCorpus.TestCase
    machine.settings = settings(
        max_examples=4,
        stateful_step_count=5,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    machine().runTest()


@pytest.fixture
def three_versions(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bees.md").write_text("# Bees\n\nBees swarm in spring when the hive is crowded.\n")
    (docs / "routers.md").write_text("# Routers\n\nA router warranty covers two years.\n")
    out = tmp_path / "col"
    build(docs, out, merge=False)
    (docs / "bees.md").write_text("# Bees\n\nBees overwinter as a cluster around the queen.\n")
    build(docs, out, merge=False)
    (docs / "routers.md").unlink()
    (docs / "merges.md").write_text("# Merges\n\nTiered merges fold small segments.\n")
    build(docs, out, merge=False)
    versions = [str(r["version"]) for r in describe_versions(out)]
    assert len(versions) == 3
    return docs, out, versions


def test_each_version_answers_as_it_was(three_versions: tuple[Path, Path, list[str]]) -> None:
    _docs, out, (head, middle, first) = three_versions
    expect = {first: "swarm", middle: "overwinter", head: "overwinter"}
    for version, word in expect.items():
        with urna.open(out, at=version.removeprefix("sha256:")[:8]) as col:
            assert col.version == version
            hit = col.search_text("what do bees do", k=1, mode="text").hits[0]
            assert word in col.cite(hit.citation_id).text
    with urna.open(out, at=first) as col:
        assert col.search_text("router warranty", k=1, mode="text").hits
        old_citation = col.search_text("swarm", k=1, mode="text").hits[0].citation_id
    with urna.open(out) as col:
        assert not col.search_text("router warranty", k=3, mode="text").hits
    # By time: the version made at or before an instant.
    created = read_catalog(out)[0].created
    at_head = run("search-text", str(out), "tiered merges", "--mode", "text", "--at", created)
    assert at_head.exit_code == 0 and "merges.md" in at_head.stdout
    assert_error(run("search-text", str(out), "x", "--at", "1999-01-01"), "is as old as")
    assert_error(run("search-text", str(out), "x", "--at", "zz"), "invalid version")
    # A citation of a retained version resolves from the head, and its source still
    # verifies where its bytes are unchanged... here they changed: the check says so.
    cited = run("cite", str(out), old_citation)
    assert cited.exit_code == 0 and "swarm" in cited.stdout, cited.stderr
    assert_error(run("cite", str(out), old_citation, "--verify-source"))
    # Pruned: the citation and --at both name the version and when it was pruned.
    pruned = run("prune", str(out), "--keep", "1")
    assert pruned.exit_code == 0 and "pruned 2 versions" in pruned.stdout
    assert_error(run("cite", str(out), old_citation), "pruned, last on")
    assert_error(run("search-text", str(out), "x", "--at", first[7:15]), "was pruned on")
    names = {p.name for p in out.iterdir() if p.suffix == ".urna"}
    assert names == retained_files(out)  # the pruned versions' files are gone
    history = run("history", str(out))
    assert history.exit_code == 0 and len(history.stdout.splitlines()) == 2


WRITER = """
import sys
from pathlib import Path
from urna.build.writer import build_folder, compact_folder
from urna.build.spec import spec_from_args
docs, out, what = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
if what == "compact":
    compact_folder(out)
else:
    build_folder(spec_from_args([docs], out), shards=2, merge=False)
print("done", flush=True)
"""


def test_a_killed_writer_leaves_the_previous_version_whole(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        (docs / f"n{i}.md").write_text(text_of(i))
    out = tmp_path / "col"
    build(docs, out, merge=False)
    rng = random.Random(7)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for trial in range(8):
        (docs / f"n{trial}.md").write_text(text_of(100 + trial))
        before, _ = read_catalog(out)
        what = "compact" if trial % 2 else "update"
        proc = subprocess.Popen(
            [sys.executable, str(script), str(docs), str(out), what],
            env=env,
            stdout=subprocess.PIPE,
        )
        time.sleep(rng.uniform(0.5, 4.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        assert proc.stdout is not None
        proc.stdout.close()
        with urna.open(out) as col:  # the previous version, or the new one: whole either way
            col.validate()
            assert col.search_text("bees", k=3, mode="text").hits
            assert col.version in (before.version, read_catalog(out)[0].version)
    build(docs, out, merge=True)  # the next run leaves no file of a killed writer behind
    named = retained_files(out)
    left = {p.name for p in out.iterdir() if p.is_file()} - {".lock", ".stat-cache"}
    tables = {n.removesuffix(".urna") + ".sources.json" for n in named}
    assert left == named | tables | {"catalog.json"}, left - named - tables
    assert all(p.suffix == ".json" for p in (out / VERSIONS).iterdir())


def test_watch_under_load_answers_from_one_version(tmp_path: Path) -> None:
    """8 clients query while 50 files change: no error, and every answer's hits come from
    the files of one version of the watched collection."""
    import json
    import threading
    import urllib.request

    from tests.server_helpers import q, start_watch

    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(10):
        (folder / f"n{i}.md").write_text(text_of(i))
    data = tmp_path / "data"
    log = (tmp_path / "server.log").open("w")
    proc, port = start_watch("notes", folder, data, 0.1, stderr=log)
    base = f"http://127.0.0.1:{port}"
    answers: list[set[str]] = []
    failures: list[object] = []
    stop = threading.Event()

    def get(path: str) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(base + path, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def client(n: int) -> None:
        while not stop.is_set():
            status, body = get(
                "/v1/search?" + q({"db": "notes", "q": QUERIES[n % 4], "limit": "8"})
            )
            if status != 200:
                failures.append((status, body))
            else:
                answers.append({h["content_hash"] for h in body["hits"]})

    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None
            try:
                if get("/api/health")[0] == 200 and get("/v1/search?q=x&db=notes")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        clients = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(8)]
        for c in clients:
            c.start()
        for i in range(50):  # edits, adds and deletes
            path = folder / f"n{i % 14}.md"
            if i % 7 == 6 and path.exists():
                path.unlink()
            else:
                path.write_text(text_of(200 + i))
            time.sleep(0.05)
        marker = folder / "last.md"
        marker.write_text("# Last\n\nA xylophone is the last word here.\n")
        end = time.monotonic() + 60
        while time.monotonic() < end:
            _, body = get("/v1/search?" + q({"db": "notes", "q": "xylophone", "mode": "text"}))
            if body.get("hits"):
                break
            time.sleep(0.1)
        else:
            said = [
                line
                for line in (tmp_path / "server.log").read_text().splitlines()
                if not line.startswith("GET ")
            ]
            pytest.fail(
                "the last change never became searchable; the server said:\n"
                + "\n".join(said[-30:])
            )
        stop.set()
        for c in clients:
            c.join(timeout=30)
    finally:
        stop.set()
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
    assert failures == [] and len(answers) > 50
    versions = [{e.content_hash for e in read_catalog(data / "notes")[0].files}] + [
        {e.content_hash for e in c.files}
        for _, c in __import__("urna.format.versions", fromlist=["chain"]).chain(data / "notes")
    ]
    for hashes in answers:
        assert any(hashes <= files for files in versions), hashes


def test_a_served_collection_follows_its_folder(tmp_path: Path) -> None:
    """`urna serve DIR` answers from each new head a build publishes, sharing the files that
    did not change with the version still answering."""
    from urna.server.databases import Databases, load

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(4):
        (docs / f"n{i}.md").write_text(text_of(i))
    out = tmp_path / "col"
    build(docs, out)
    dbs: Databases = load([out])
    before = dbs.get("col")
    assert isinstance(before, urna.Collection)
    (docs / "n9.md").write_text("# Quokka\n\nA quokka smiles at the camera.\n")
    build(docs, out, merge=False)
    time.sleep(Databases.FOLLOW + 0.05)
    after = dbs.get("col")
    assert isinstance(after, urna.Collection) and after.version != before.version
    assert after.search_text("quokka", k=1, mode="text").hits
    assert not before.search_text("quokka", k=1, mode="text").hits  # the old one still answers
    shared = {s.facts.name for s in before.shards} & {s.facts.name for s in after.shards}
    assert shared == {s.facts.name for s in before.shards}


def test_a_watched_folder_lives_in_the_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urna.server.databases import Databases
    from urna.server.watch import Watch, Watcher

    monkeypatch.setenv("URNA_HOME", str(tmp_path / "home"))
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text(text_of(1))
    dbs = Databases()
    watcher = Watcher(dbs, [Watch("notes", folder)], None, model="minilm")
    watcher.build(Watch("notes", folder))
    assert (tmp_path / "home" / "notes" / "catalog.json").is_file()
    listed = run("list")
    assert listed.exit_code == 0 and "notes" in listed.stdout and "collection" in listed.stdout
    served = dbs.get("notes")
    assert served is not None and served.search_text("bees", k=1, mode="text").hits


def test_an_update_keeps_the_options_it_was_built_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`urna build SOURCES -o DIR` from another folder, without the first build's options,
    updates the collection as it is (same source_uris, model and preset), not a new one."""
    docs = tmp_path / "work" / "docs"
    docs.mkdir(parents=True)
    for i in range(3):
        (docs / f"n{i}.md").write_text(text_of(i))
    monkeypatch.chdir(tmp_path / "work")
    first = run("build", "docs", "-o", "col", "--shards", "2", "--preset", "exact")
    assert first.exit_code == 0, first.stderr
    (docs / "n1.md").write_text(text_of(50))
    monkeypatch.chdir(tmp_path)
    again = run("build", str(docs), "-o", str(tmp_path / "work" / "col"))
    assert again.exit_code == 0, again.stderr
    assert "0 added, 1 changed, 0 removed" in again.stdout, again.stdout
    with urna.open(tmp_path / "work" / "col") as col:
        assert {col.chunk(i).source_uri for i in range(col.n_chunks)} <= {
            f"docs/n{i}.md" for i in range(3)
        }
        assert not col.has_ann_index  # still the exact preset


@needs_models
def test_a_collection_you_built_is_watched_in_place_and_a_quiet_start_writes_nothing(
    tmp_path: Path,
) -> None:
    """``urna serve COLL --watch coll=DIR``: the watcher keeps the collection you built
    (same folder, its recorded options: here the static model, which the watcher was not
    told), a start with nothing changed writes no version, and a saved file is an update."""
    from urna.server.databases import load
    from urna.server.watch import Watch, Watcher

    docs, col = tmp_path / "notes", tmp_path / "served" / "coll"
    docs.mkdir()
    for i in range(4):
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\nkrill and whales, {i}.\n")
    built = run("build", str(docs), "-o", str(col), "--shards", "2", "--model", "static")
    assert built.exit_code == 0, built.stderr
    before = sorted(os.listdir(col / VERSIONS))
    dbs = load([col])
    watch = Watch("coll", docs, collection=col)
    watcher = Watcher(dbs, [watch], None, model=None, report=lambda _: None)
    watcher.build(watch)
    assert sorted(os.listdir(col / VERSIONS)) == before  # nothing changed: no version
    (docs / "n9.md").write_text("# Note 9\n\nzyzzyva swims past.\n")
    watcher.build(watch)
    assert len(os.listdir(col / VERSIONS)) == len(before) + 1
    served = dbs.get("coll")
    assert served is not None
    assert served.search_text("zyzzyva", k=1, mode="text").hits[0].source_uri.endswith("n9.md")
