"""A collection's shards asked in parallel threads answer exactly as when asked one after
another: the same hits, scores, per-method ranks and counts, on every query path (exact,
HNSW, graph, BM25, hybrid, with and without a where-filter)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import urna
from tests.conftest import in_threads, require_models, run
from tests.test_where import WORDS
from urna import Query
from urna.index.bm25_global import TermStats


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fanout")
    docs = root / "docs"
    docs.mkdir()
    rng = random.Random(3)
    for i in range(120):
        front = json.dumps({"team": ["red", "blue", "green"][i % 3], "n": i})
        body = ". ".join(" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(4))
        (docs / f"d{i:03d}.md").write_text(f"---\n{front}\n---\n# Doc {i}\n\n{body}.\n")
    out = root / "col"
    require_models()
    result = run("build", str(docs), "-o", str(out), "--shards", "4", "--model", "static")
    assert result.exit_code == 0, result.stderr
    tables = list(out.glob("text-*.bm25"))
    assert len(tables) == 1
    tables[0].unlink()  # these tests weigh the shards' own postings (test_text_table.py: not)
    return out


def answer(corpus: Any, query: Query) -> list[Any]:
    r = corpus.run(query)
    hits = [
        (h.chunk_id, h.score, h.source_uri, json.dumps(h.to_dict().get("ranks"))) for h in r.hits
    ]
    return [r.index_type, r.n_searched, r.mode, r.candidates, hits]


@contextmanager
def searched(paths: list[Path], retire_odd: bool = False) -> Iterator[Any]:
    """A core over these files as shards (every other one with its first chunk deleted, as
    a catalog's deletion, when ``retire_odd``), closed after."""
    from urna.search.core import Searcher
    from urna.search.corpus import open_shard

    opened = [open_shard(p) for p in paths]
    shards = [s.retired([(0, 1)]) if retire_odd and i % 2 else s for i, s in enumerate(opened)]
    searcher = Searcher(shards)
    try:
        yield searcher
    finally:
        searcher.close()
        for s in opened:
            s.close()


def test_parallel_threads_answer_as_one_after_another(collection: Path) -> None:
    rng = random.Random(5)
    texts = [" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(12)]
    with urna.open(collection) as corpus:
        assert len(corpus._searcher.shards) == 4
        vectors = [corpus.embedding(i * 5) for i in range(12)]
        queries = [Query(text=t, k=10, mode=m) for t in texts for m in ("text", "hybrid")]
        queries += [Query(text=t, k=7, mode="hybrid", where={"team": "red"}) for t in texts]
        queries += [Query(vector=v, k=10, method=m) for v in vectors for m in ("exact", "ann")]
        queries += [Query(vector=v, k=5, method="graph", hops=1) for v in vectors[:4]]
        answers = {}
        for policy in ("never", "always"):
            corpus._searcher.threads = policy
            answers[policy] = [answer(corpus, q) for q in queries]
    assert answers["always"] == answers["never"]
    assert any(a[4] for a in answers["never"])  # the queries found something


def test_one_exact_pass_over_shards_is_the_merge_of_each_shards_top(tmp_path: Path) -> None:
    """The core scores rows exactly once for all local float32 shards (``search/pooled.py``):
    the same ordinals and score bits as each shard's exact top merged, on rows with
    duplicates, near-ties and clusters, with and without a where-filter."""
    import numpy as np
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.conftest import PLACEHOLDER
    from urna.search.merge import merge_top
    from urna.search.query import prepare

    built = iter(range(10**6))

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        seed=st.integers(0, 2**31),
        sizes=st.lists(st.integers(1, 40), min_size=2, max_size=5),
        depth=st.integers(1, 30),
        filtered=st.booleans(),
    )
    def check(seed: int, sizes: list[int], depth: int, filtered: bool) -> None:
        rng = np.random.default_rng(seed)
        dim = 8
        centres = rng.normal(size=(3, dim))
        paths = []
        for size in sizes:
            rows = centres[rng.integers(0, 3, size)] + rng.normal(size=(size, dim)) * 1e-3
            rows[rng.random(size) < 0.3] = centres[0]  # exact duplicates across shards
            path = tmp_path / f"s{next(built)}.urna"
            chunks = [
                {
                    "text": f"t{i}",
                    "source_uri": f"doc{i % 7}.txt",
                    "byte_start": i * 4,
                    "byte_end": i * 4 + 2,
                    "embedding": row.tolist(),
                    "metadata": {"even": i % 2 == 0},
                }
                for i, row in enumerate(rows)
            ]
            urna.build(path, chunks, model="demo", model_hash=PLACEHOLDER, chunker_version="demo/1")
            paths.append(path)
        with searched(paths) as searcher:
            q = prepare(list(centres[0] + rng.normal(size=dim) * 1e-3), dim)
            kept = searcher.kept(Query(vector=q, where={"even": True})) if filtered else None
            ours = searcher.vector_top(q, depth, kept)
            parts = [s.vector_top(q, depth, kept) for s in searcher.shards]
            theirs = merge_top(searcher._global(parts), depth, searcher.source_uris)
            assert ours[0].tolist() == theirs[0].tolist()
            assert np.asarray(ours[1]).tobytes() == np.asarray(theirs[1]).tobytes()

    check()


def test_one_text_pass_over_shards_is_the_merge_of_each_shards_top(tmp_path: Path) -> None:
    """The core scores BM25 into one array for all local shards (``search/pooled.py``): the
    same ordinals and score bits as each shard's own top merged, on texts of a few words
    (many equal scores, sources spread over shards, shards of unlike lengths), with deleted
    chunks; weighing only the rows the bounds let through, or every posting."""
    import numpy as np
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.conftest import PLACEHOLDER
    from urna.index.bm25_global import TermStats
    from urna.search import pooled
    from urna.search import postings as postings_module
    from urna.search.merge import merge_top
    from urna.search.pooled import one_text_pass

    built = iter(range(10**6))
    vocab = ["alpha", "beta", "gamma", "delta"]

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        seed=st.integers(0, 2**31),
        sizes=st.lists(st.integers(1, 30), min_size=2, max_size=5),
        depth=st.integers(1, 40),
        deleted=st.booleans(),
    )
    def check(seed: int, sizes: list[int], depth: int, deleted: bool) -> None:
        rng = random.Random(seed)
        paths = []
        for size in sizes:
            path = tmp_path / f"t{next(built)}.urna"
            chunks = [
                {
                    "text": " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 6))),
                    "source_uri": f"doc{rng.randint(0, 9)}.txt",
                    "byte_start": i * 4,
                    "byte_end": i * 4 + 2,
                    "embedding": [rng.random() + 0.1 for _ in range(4)],
                }
                for i in range(size)
            ]
            chunks.sort(key=lambda c: (c["source_uri"], c["byte_start"]))
            urna.build(
                path, chunks, model="demo", model_hash=PLACEHOLDER, chunker_version="demo/1",
                bm25=True,
            )  # fmt: skip
            paths.append(path)
        with searched(paths, retire_odd=deleted) as searcher:
            shards = searcher.shards
            tokens = searcher.tokenize(" ".join(rng.sample(vocab, 2)))
            stats = TermStats.combine([s.term_stats(tokens) for s in shards])
            if rng.random() < 0.5:  # the totals asked of the shards first, the terms read
                searcher.stats.of([])  # from their tables (deleted chunks left out)
            assert searcher.stats.of(tokens) == stats
            assert searcher.stats.of(tokens) == stats  # kept
            before = tokens[:1] if rng.random() < 0.5 else []
            if before:  # one word seen before: the query mixes exact weights and bounds
                one_text_pass(searcher, before, stats, depth, None)
            real, answered = pooled._bounded_top, []
            known = [t for t in tokens if stats.df.get(t)]
            postings = searcher.postings

            def spy(*args: Any) -> Any:
                found = real(*args)
                answered.append(found is not None)
                return found

            with mock.patch.object(pooled, "_bounded_top", spy):
                ours = one_text_pass(searcher, tokens, stats, depth, None)
            assert not any(postings.kept(t, stats) for t in known if t not in before)
            assert ours is not None
            assert answered == ([True] if any(t not in before for t in known) else [])  # bounds
            parts = [s.text_top(tokens, stats, depth, None) for s in shards]
            theirs = merge_top(searcher._global(parts), depth, searcher.source_uris)
            assert ours[0].tolist() == theirs[0].tolist()
            assert np.asarray(ours[1]).tobytes() == np.asarray(theirs[1]).tobytes()
            # Seen again, each word is weighed in full and kept; then every weight is known,
            # and the one array is cut by the seed's bound, or without it: the same answer.
            again = one_text_pass(searcher, tokens, stats, depth, None)
            assert all(postings.kept(t, stats) is not None for t in known)
            full = one_text_pass(searcher, tokens, stats, depth, None)
            with mock.patch.object(pooled, "_seed", lambda *_: None):
                plain = one_text_pass(searcher, tokens, stats, depth, None)
            for other in (again, full, plain):
                assert other is not None and other[0].tolist() == ours[0].tolist()
                assert np.asarray(other[1]).tobytes() == np.asarray(ours[1]).tobytes()

    with mock.patch.object(postings_module, "BOUND_MIN", 1):  # every word bounded first
        check()


def test_a_word_only_deleted_chunks_hold_adds_nothing(tmp_path: Path) -> None:
    """A word whose every chunk is deleted (as a living collection's updates leave it),
    asked with a long word seen for the first time (bounded), answers as the shards' own
    tops do: the bounded pass looked the short word's (no) rows up with an IndexError."""
    from tests.conftest import PLACEHOLDER
    from urna.index.bm25_global import TermStats
    from urna.search import postings as postings_module
    from urna.search.merge import merge_top
    from urna.search.pooled import one_text_pass

    # A source a chunk: no chunk counts a neighbour's words.
    texts = [["omega beta", "beta", "beta gamma"], ["alpha beta", "beta", "beta beta"]]
    paths = []
    for n, part in enumerate(texts):
        path = tmp_path / f"s{n}.urna"
        chunks = [
            {"text": t, "source_uri": f"d{n}-{i}.txt", "byte_start": 0, "byte_end": 5,
             "embedding": [1.0, float(i), 0.5, 0.25]}
            for i, t in enumerate(part)
        ]  # fmt: skip
        urna.build(
            path, chunks, model="demo", model_hash=PLACEHOLDER, chunker_version="demo/1",
            bm25=True,
        )  # fmt: skip
        paths.append(path)
    # The first shard's first chunk, the only one holding "omega", deleted; "omega" is a
    # short list (weighed at once), "beta" a long one (bounded).
    with (
        mock.patch.object(postings_module, "BOUND_MIN", 2),
        searched(paths[::-1], retire_odd=True) as searcher,
    ):
        tokens = searcher.tokenize("omega beta")
        stats = searcher.stats.of(tokens)
        assert stats.df.get("omega") == 0 and stats.df["beta"] == 5
        ours = one_text_pass(searcher, tokens, stats, 10, None)
        parts = [s.text_top(tokens, stats, 10, None) for s in searcher.shards]
        theirs = merge_top(searcher._global(parts), 10, searcher.source_uris)
        assert ours is not None and len(ours[0]) == 5
        assert ours[0].tolist() == theirs[0].tolist()
        assert ours[1].tobytes() == theirs[1].tobytes()
        assert TermStats.combine([s.term_stats(tokens) for s in searcher.shards]) == stats


def test_a_collection_asks_its_shards_for_a_terms_statistics_once(collection: Path) -> None:
    """The shards are asked for their statistics on the first query; each term's collection
    frequency is then kept (``search/postings.py``), and a new term's is read from the local
    shards' tables: a repeated query asks nothing and answers the same, a new word asks
    nothing and gets what the shards would have said."""
    corpus = urna.open(collection)
    searcher = corpus._searcher
    asked: list[list[str]] = []

    def counted(real: Any) -> Any:
        def term_stats(tokens: list[str]) -> Any:
            asked.append(list(tokens))
            return real(tokens)

        return term_stats

    for shard in searcher.shards:
        shard.term_stats = counted(shard.term_stats)  # type: ignore[method-assign]
    first = answer(corpus, Query(text="citation shard vector", k=5, mode="text"))
    assert len(asked) == len(searcher.shards) and all(asked)
    asked.clear()
    assert answer(corpus, Query(text="citation shard vector", k=5, mode="text")) == first
    assert asked == []
    answer(corpus, Query(text="citation filter", k=5, mode="text"))
    assert asked == []
    words = searcher.tokenize("filter citation")
    said = TermStats.combine([s.term_stats(words) for s in searcher.shards])
    assert all(said.df.get(w) for w in words)
    assert searcher.stats.of(words) == said
    assert first


def test_hnsw_over_shards_reranks_one_pool(collection: Path) -> None:
    """Each shard's graph proposes, the pooled 2 max(ef, k) nearest are reranked once: the
    answer is HNSW's (not a fall back to exact), each chunk finds itself first, and the
    hits agree with the exact top as closely as a file's own HNSW does."""
    from urna.search.pooled import pooled_walk

    with urna.open(collection) as corpus:
        searcher = corpus._searcher
        vectors = [corpus.embedding(i * 3) for i in range(30)]
        for v in vectors[:3]:  # the pooled path runs (each shard's own ann_top is not called)
            assert pooled_walk(searcher, v, 10, 100, 50, None) is not None
        agree = 0
        for i, v in enumerate(vectors):
            ann = corpus.run(Query(vector=v, k=10, method="ann"))
            exact = corpus.run(Query(vector=v, k=10, method="exact"))
            assert ann.index_type == "hnsw" and ann.hits[0].ordinal == i * 3
            scores = {h.chunk_id: h.score for h in exact.hits}
            for hit in ann.hits:  # a reranked hit's score is the exact path's bits
                assert hit.chunk_id not in scores or hit.score == scores[hit.chunk_id]
            agree += len({h.chunk_id for h in ann.hits} & set(scores))
        assert agree >= 0.95 * 10 * len(vectors)
        filtered = corpus.run(Query(vector=vectors[0], k=5, method="ann", where={"team": "red"}))
        assert filtered.index_type == "exact"  # a filter: exact over what it keeps


def test_threads_sharing_a_collections_postings_keep_its_byte_counts(collection: Path) -> None:
    """A server's threads share one collection's postings caches: text queries asked from 8
    threads at once (every word bounded on its first sighting, weighed in full on its
    second) answer as asked one after another, and each cache's byte count is what it
    holds."""
    from urna.search import postings as postings_module

    rng = random.Random(11)
    texts = [" ".join(rng.choice(WORDS) for _ in range(4)) for _ in range(16)]
    queries = [Query(text=t, k=8, mode="text") for t in texts]
    with urna.open(collection) as alone:
        expected = [answer(alone, q) for q in queries]
    with mock.patch.object(postings_module, "BOUND_MIN", 1), urna.open(collection) as corpus:
        got: dict[int, list[Any]] = {}

        def ask(worker: int) -> None:
            for j in range(2 * len(queries)):
                i = (j * 7 + worker * 5) % len(queries)
                got.setdefault(i, []).append(answer(corpus, queries[i]))

        in_threads(ask, list(range(8)))
        postings = corpus._searcher.postings
        assert postings._bytes == sum(r.nbytes + w.nbytes for _, r, w in postings._kept.values())
        assert postings._term_bytes == sum(v[3] for v in postings._terms.values())
        assert postings._kept  # words were weighed in full and kept
    for i, answers in got.items():
        assert all(a == expected[i] for a in answers)


class _Elsewhere:
    """A real shard file's answers, taken as a remote shard's (``remote = True``, no local
    hit maker): every call counted, and each of the calls a query makes per shard held
    for a while, as a call to another process waits."""

    remote = True
    hit_maker = None
    held = ("vector_top", "term_stats", "text_top", "scores_at", "embeddings", "source_uris")

    def __init__(self, shard: Any, seen: dict[str, list[int]], lock: Any) -> None:
        self._shard, self._seen, self._lock = shard, seen, lock

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._shard, name)
        if name not in self.held and name != "make_hits":
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            import time

            with self._lock:
                now = self._seen.setdefault(name, [0, 0])
                now[0] += 1
                now[1] = max(now[1], now[0])
            try:
                time.sleep(0.05)
                return real(*args, **kwargs)
            finally:
                with self._lock:
                    now[0] -= 1

        return call


def test_remote_shards_are_asked_at_once_and_answer_as_local_ones(collection: Path) -> None:
    """Shards in other processes (Ray's) are each asked in a thread of their own (all four
    at once, however few cores the machine has), on every per-shard call of a hybrid
    query: its methods' tops, the complete scores of fusion (``search/complete.py``), the
    hits and their sources; and the answer is the local core's, bit for bit."""
    import threading

    paths = sorted(collection.glob("*.urna"))
    assert len(paths) == 4
    texts = ["alpha vector shard", "citation filter", "graph neighbours chunk"]
    queries = [Query(text=t, k=8, mode=m) for t in texts for m in ("hybrid", "text")]
    with searched(paths) as local:
        expected = [answer(local, q) for q in queries]
    seen: dict[str, list[int]] = {}
    lock = threading.Lock()
    with searched(paths) as core:
        core.__init__([_Elsewhere(s, seen, lock) for s in core.shards])  # type: ignore[misc]
        assert core.remote
        assert [answer(core, q) for q in queries] == expected
    assert any(e[4] for e in expected)
    at_once = {name: most for name, (_, most) in seen.items()}
    assert set(at_once) == {*_Elsewhere.held, "make_hits"}, at_once
    assert all(at_once[name] == 4 for name in ("vector_top", "term_stats", "text_top")), at_once
    assert all(most > 1 for most in at_once.values()), at_once  # those holding hits: 2 to 4
