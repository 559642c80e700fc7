"""BM25: the tokenizer's promises, agreement with bm25s, and malformed index sections."""

from __future__ import annotations

import json
import struct
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna
from tests.conftest import PLACEHOLDER, SHARED, assert_error, in_threads, run
from tests.forge import put_together, take_apart
from urna.index.bm25 import K1, BM25Index, idf
from urna.index.bm25_build import build_payload
from urna.index.tokenize import (
    TOKENIZER_V1,
    TOKENIZER_V2,
    TOKENIZER_VERSION,
    tokenize,
    tokenize_query,
    tokenize_v1,
    tokenize_v2,
    tokenizer_for,
)


def test_tokenizer_keeps_identifiers_and_stems_words() -> None:
    text = "The LM358B-Q1 op-amps, version 5.3.1, use snake_case Running runners"
    tokens = tokenize(text)
    # Version 3 splits at hyphens, as Lucene's StandardTokenizer does; . and _ still join.
    assert "lm358b-q1" not in tokens and "lm358b" in tokens and "q1" in tokens
    assert "op" in tokens and "amp" in tokens
    assert "5.3.1" in tokens and "snake_case" in tokens and "snake" in tokens
    assert "run" in tokens and "runner" in tokens and "the" not in tokens
    assert "lm358b-q1" in tokenize_v2(text)  # version 2 (files built before) kept it whole


def test_tokenizer_drops_single_latin_letters_and_digits() -> None:
    tokens = tokenize("DDC's type 2 diabetes, vitamin B and the α chain of 向 in 2024")
    assert "s" not in tokens and "b" not in tokens and "2" not in tokens
    assert "2024" in tokens and "α" in tokens and "向" in tokens and "ddc" in tokens
    # Versions 1 and 2 (files built before) kept the digit, version 1 the letters; their
    # queries are tokenized their way.
    assert "2" in tokenize_v2("type 2") and "s" not in tokenize_v2("DDC's")
    assert "s" in tokenize_v1("DDC's") and "b" in tokenize_v1("vitamin B")


def test_queries_drop_the_longer_stop_list_and_documents_do_not() -> None:
    query = "how do I stop my bees from swarming?"
    assert tokenize_query(query) == ["stop", "bee", "swarm"]
    assert "from" in tokenize(query) and "how" in tokenize(query)
    # An index names its tokenizer; a version 3 index reads queries with the longer list.
    index = BM25Index(memoryview(build_payload(["bees swarm from the hive"])), 1)
    assert index.tokenize(query) == ["stop", "bee", "swarm"]


def test_a_chunk_is_indexed_with_its_neighbours_at_half_weight() -> None:
    texts = ["queen bees", "swarm in spring", "hive boxes", "unrelated swarm"]
    sources = ["a", "a", "a", "b"]
    index = BM25Index(memoryview(build_payload(texts, sources=sources, divisor=2)), 4)
    # Two words each ("in" is a stop word); lengths in halves: 2 x own + the neighbours'.
    assert index.divisor == 2 and index.doc_len.tolist() == [4 + 2, 4 + 2 + 2, 4 + 2, 4]
    queen = index.scores(["queen"])
    # Chunk 1 holds chunk 0's "queen" at 1/2; chunk 2 is two away, chunk 3 another source.
    assert queen[0] > queen[1] > 0 and queen[2] == 0 and queen[3] == 0
    alone = BM25Index(memoryview(build_payload(texts)), 4)
    assert alone.divisor == 0 and alone.scores(["queen"]).tolist()[1:] == [0, 0, 0]
    with pytest.raises(ValueError, match="one source key per document"):
        build_payload(texts, divisor=2)


WORDS = ["queen", "bee", "hive", "swarm", "honey", "wax", "the", "bees"]
DOCS = st.lists(
    st.tuples(st.lists(st.sampled_from(WORDS), max_size=6), st.sampled_from("abc")),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(DOCS, st.sampled_from([0, 2, 4]))
def test_every_stored_weight_is_the_formula_of_its_chunk(
    docs: list[tuple[list[str], str]], m: int
) -> None:
    """The flat-array build against the formula, written out chunk by chunk."""
    texts = [" ".join(words) for words, _ in docs]
    sources = [source for _, source in docs]
    index = BM25Index(memoryview(build_payload(texts, sources=sources, divisor=m)), len(docs))
    own = [tokenize(t) for t in texts]
    units = []  # each chunk's term counts and length in units of 1/m (m = 0: its own)
    for i, tokens in enumerate(own):
        near = [j for j in (i - 1, i + 1) if m and 0 <= j < len(own) and sources[j] == sources[i]]
        counts = {t: (m or 1) * tokens.count(t) for t in set(tokens)}
        for j in near:
            for t in own[j]:
                counts[t] = counts.get(t, 0) + 1
        units.append((counts, (m or 1) * len(tokens) + sum(len(own[j]) for j in near)))
    assert index.doc_len.tolist() == [length for _, length in units]
    scale = float(m or 1)
    avgdl = float(np.mean([length / scale for _, length in units]))
    for term in {t for tokens in own for t in tokens}:
        df = sum(term in counts for counts, _ in units)
        expected = np.zeros(len(docs), dtype=np.float32)
        for i, (counts, length) in enumerate(units):
            if term in counts:
                tf = counts[term] / scale
                norm = K1 * (1 - 0.75 + 0.75 * (length / scale) / (avgdl or 1.0))
                expected[i] = np.float32(idf(len(docs), df) * tf / (tf + norm))
        assert index.scores([term]).tolist() == expected.tolist(), term


def test_a_file_keeps_the_tokenizer_it_was_built_with(tmp_path: Path) -> None:
    texts = ["vitamin b deficiency", "vitamin c deficiency"]
    for name, best in ((TOKENIZER_V1, 0), (TOKENIZER_V2, None), (TOKENIZER_VERSION, None)):
        index = BM25Index(memoryview(build_payload(texts, tokenizer=name)), len(texts))
        assert index.tokenizer == name
        scores = index.scores(index.tokenize("b"))
        assert (int(np.argmax(scores)) if scores.any() else None) == best
        # Only version 3 reads queries with NLTK's stop list: older files answer as before.
        assert index.tokenize("from plant-based") == (
            ["plant", "base"]
            if name == TOKENIZER_VERSION
            else tokenizer_for(name)("from plant-based")
        )
    bad = build_payload(texts).replace(b"urna-bm25-tokens/3", b"urna-bm25-tokens/9")
    with pytest.raises(urna.FormatError, match="tokenizer 'urna-bm25-tokens/9"):
        BM25Index(memoryview(bad), len(texts))


def test_a_repeated_query_term_counts_each_time(tmp_path: Path) -> None:
    texts = [
        "apple apple apple orchard harvest",  # strong on apple
        "pear tree in the orchard harvest season",  # weaker on pear, a rarer-in-query term
        "nothing relevant here at all",
    ]
    index = BM25Index(memoryview(build_payload(texts)), len(texts))
    once = index.scores(tokenize("apple pear"))
    thrice = index.scores(tokenize("apple pear pear pear"))
    assert np.argmax(once) == 0 and np.argmax(thrice) == 1
    pear = index.scores(["pear"])
    np.testing.assert_allclose(thrice - once, 2 * pear, rtol=1e-6)
    path = _corpus(tmp_path, texts)
    with urna.open(path) as corpus:
        hits = corpus.search_text("apple pear pear pear", k=2, mode="text").hits
        assert [h.ordinal for h in hits] == [1, 0]
        assert hits[0].score == pytest.approx(float(thrice[1]), rel=1e-6)


def test_tokenizer_cjk_bigrams() -> None:
    assert tokenize("向量检索") == ["向", "量", "检", "索", "向量", "量检", "检索"]
    assert "検索" in tokenize("全文検索エンジン") and "한국" in tokenize("한국어 검색")
    assert tokenize("   ,,, !!") == []


def _corpus(tmp_path: Path, texts: list[str]) -> Path:
    path = tmp_path / "b.urna"
    rng = np.random.default_rng(0)
    chunks = [
        {"text": t, "source_uri": f"d{i}.txt", "byte_start": 0, "byte_end": len(t.encode())}
        for i, t in enumerate(texts)
    ]
    urna.build(
        path,
        chunks,
        embeddings=rng.standard_normal((len(texts), 8)),
        model="m",
        model_hash=PLACEHOLDER,
        chunker_version="c/1",
        bm25=True,
    )
    return path


TEXTS = [
    "Vector search finds passages by meaning.",
    "向量检索可以按照语义查找段落。",
    "全文検索エンジンはキーワードで文書を探します。",
    "The LM358B-Q1 is a dual operational amplifier.",
    "BM25 ranks documents by term frequency and rarity.",
]


def test_cjk_and_identifier_queries_find_their_chunks(tmp_path: Path) -> None:
    path = _corpus(tmp_path, TEXTS)
    with urna.open(path) as corpus:
        for query, want in [
            ("向量检索", 1),
            ("検索エンジン", 2),
            ("LM358B-Q1", 3),
            ("lm358b", 3),
            ("ranking documents", 4),
        ]:
            result = corpus.search_text(query, k=1, mode="text")
            assert result.hits[0].ordinal == want, query
            assert result.hits[0].score_type == "bm25"
        assert corpus.search_text("the of and", k=3, mode="text").hits == []
    # text mode needs no model: it works on a file whose model hash is the placeholder.
    out = run("retrieve", str(path), "向量检索", "--mode", "text", "-k", "1")
    assert out.exit_code == 0 and json.loads(out.stdout)["source_uri"] == "d1.txt"
    # auto falls back to text when the file's model cannot embed the query, and says why.
    auto = json.loads(run("search-text", str(path), "向量检索", "--json").stdout)
    assert auto["mode"] == "text" and "vector path unavailable" in auto["note"]


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "data" / "scifact").is_dir(), reason="needs ../shared/data")
@pytest.mark.parametrize(
    "name, queries",
    [("scifact", "queries.jsonl"), ("nfcorpus", "alt_queries/queries_all.jsonl")],
)
def test_scores_agree_with_bm25s(name: str, queries: str) -> None:
    """Short queries (scifact) and verbose ones (nfcorpus video descriptions, which repeat
    terms): the same tokens, duplicates included, give bm25s's scores within 1e-4 of the
    query's best score (verbose queries reach scores in the thousands, where float32 sums in
    another order differ in the last bits)."""
    bm25s = pytest.importorskip("bm25s")
    folder = SHARED / "data" / name
    docs = [json.loads(x) for x in (folder / "corpus.jsonl").read_text().splitlines()]
    texts = [(d["title"] + "\n\n" + d["text"]).strip() for d in docs]
    index = BM25Index(memoryview(build_payload(texts)), len(texts))
    reference = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    reference.index([tokenize(t) for t in texts], show_progress=False)
    lines = (folder / queries).read_text().splitlines()
    worst, repeated = 0.0, 0
    for query in (json.loads(x)["text"] for x in lines):
        tokens = [t for t in tokenize(query) if t in reference.vocab_dict]
        if tokens:
            repeated += len(set(tokens)) < len(tokens)
            theirs = reference.get_scores(tokens)
            gap = float(np.abs(index.scores(tokens) - theirs).max())
            worst = max(worst, gap / max(1.0, float(np.abs(theirs).max())))
    assert worst < 1e-4
    assert repeated > (100 if name == "nfcorpus" else 0)


def _refused(tmp_path: Path, payload: bytes, fragment: str) -> None:
    parts = take_apart(_corpus(tmp_path, TEXTS).read_bytes())
    parts.sections[8] = (0, payload)
    path = tmp_path / "bad.urna"
    path.write_bytes(put_together(parts))
    with pytest.raises(urna.FormatError, match=fragment):
        urna.open(path)
    assert_error(run("stats", str(path)), fragment)


def test_malformed_bm25_sections_are_refused(tmp_path: Path) -> None:
    good = build_payload(TEXTS)
    _refused(tmp_path, good[:-3], "bm25 index: payload is")
    _refused(tmp_path, struct.pack("<I", 9) + good[4:], "unsupported version 9")
    # The context divisor goes with the version: 0 for version 1, m >= 1 for version 2.
    _refused(tmp_path, struct.pack("<I", 2) + good[4:], "version 2 with context divisor 0")
    _refused(tmp_path, good[:12] + struct.pack("<Q", 7) + good[20:], "indexes 7 documents")
    # A posting that names a document past the end.
    index = BM25Index(memoryview(good), len(TEXTS))
    nnz = len(index.doc_ids)
    ids_at = len(good) - 4 * len(TEXTS) - 8 * nnz
    bad = bytearray(good)
    struct.pack_into("<I", bad, ids_at, 99)
    _refused(tmp_path, bytes(bad), "names document 99")
    bad = bytearray(good)
    struct.pack_into("<f", bad, ids_at + 4 * nnz, float("nan"))
    _refused(tmp_path, bytes(bad), "NaN or Inf")
    _refused(tmp_path, good[:40], "runs past the end")


def test_stats_shows_the_recorded_text_recipe(tmp_path: Path) -> None:
    """What decides a text query's answer is recorded in the file and shown: the tokenizer
    (with its query stop list), k1 and b, the chunk context, and hybrid's feedback."""
    path = _corpus(tmp_path, ["bees swarm in spring", "queens lead the swarm"])
    shown = run("stats", str(path))
    assert shown.exit_code == 0, shown.stderr
    assert TOKENIZER_VERSION in shown.stdout and "query-en-nltk-stop" in TOKENIZER_VERSION
    assert "k1 = 1.5, b = 0.75, neighbours at 1/2" in shown.stdout
    assert "feedback" in shown.stdout and "rocchio, 5 fused chunks, weight 0.3" in shown.stdout
    with urna.open(path) as corpus:
        assert corpus.bm25 is not None and corpus.bm25.divisor == 2
        assert corpus.manifest["fusion"]["feedback"]["docs"] == 5


def test_shards_score_as_one_file_bit_for_bit() -> None:
    """``GlobalScorer`` over the parts of a document set, with the whole set's statistics,
    gives the scores one index of every document stores, bit for bit: terms new to the
    scorer and terms it kept, weighed together or one by one, repeated in the query, and
    again after the statistics change (a part's terms weighed anew)."""
    from urna.index.bm25 import BM25Index
    from urna.index.bm25_build import build_payload
    from urna.index.bm25_global import GlobalScorer, TermStats

    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "theta", "kappa"]
    doc = st.lists(st.sampled_from(words), min_size=1, max_size=12)

    def index_of(texts: list[str], sources: list[str]) -> BM25Index:
        return BM25Index(memoryview(build_payload(texts, sources=sources, divisor=2)), len(texts))

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(doc, min_size=2, max_size=30),
        st.integers(1, 4),
        st.lists(st.lists(st.sampled_from([*words, "absent"]), max_size=6), min_size=1, max_size=5),
    )
    def check(docs: list[list[str]], cuts: int, queries: list[list[str]]) -> None:
        texts = [" ".join(d) for d in docs]
        sources = [f"s{i // 3}" for i in range(len(texts))]
        # A source (three chunks here) lies in one part, as it lies in one shard.
        cut_at = (3 * (len(texts) * c // (3 * (cuts + 1))) for c in range(1, cuts + 1))
        bounds = sorted({0, len(texts), *cut_at})
        parts = [(a, b) for a, b in pairwise(bounds) if b > a]
        whole = index_of(texts, sources)
        shards = [index_of(texts[a:b], sources[a:b]) for a, b in parts]
        scorers = [GlobalScorer(s) for s in shards]
        for q in [*queries, *queries[::-1]]:  # the second round finds the terms kept
            tokens = whole.tokenize(" ".join(q))
            stats = TermStats.combine([s.stats(tokens) for s in scorers])
            got = np.concatenate([s.scores(tokens, stats) for s in scorers])
            assert got.tobytes() == whole.scores(tokens).tobytes()
        # Statistics that change (a smaller set): each part's own, weighed anew and kept.
        for scorer, shard in zip(scorers, shards, strict=True):
            tokens = whole.tokenize(" ".join(queries[0]))
            own = scorer.scores(tokens, scorer.stats(tokens))
            assert own.tobytes() == shard.scores(tokens).tobytes()

    check()


def test_threads_sharing_a_scorer_keep_its_byte_count() -> None:
    """A shard's ``GlobalScorer`` keeps each term's weights under a collection's statistics;
    8 threads weighing the same new terms at once get the weights one thread gets, and the
    bytes it counts are the bytes it keeps."""
    import random

    from urna.index.bm25_build import build_payload
    from urna.index.bm25_global import GlobalScorer, TermStats

    rng = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    texts = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(3000)]
    index = BM25Index(memoryview(build_payload(texts, sources=["s"] * len(texts))), len(texts))
    alone = GlobalScorer(index)
    tokens = index.tokenize(" ".join(words))
    stats = TermStats(len(texts) * 2, alone.total_length * 3, alone.stats(tokens).df)
    expected = {t: alone.postings(t, stats)[1].tobytes() for t in tokens}
    shared, wrong = GlobalScorer(index), []

    def weigh(first: int) -> None:
        for j in range(len(tokens)):
            token = tokens[(first + j) % len(tokens)]
            if shared.postings(token, stats)[1].tobytes() != expected[token]:
                wrong.append(token)

    in_threads(weigh, [7 * i for i in range(8)], timeout=60)
    assert wrong == []
    assert shared._weight_bytes == sum(w.nbytes for _, w in shared._weights.values())
    assert len(shared._weights) == len(set(tokens))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.0, 2.5, 7.0, float("nan"), float("inf")]),
        min_size=1,
        max_size=80,
    ),
    st.integers(1, 12),
    st.data(),
)
def test_a_seed_bounds_the_top_without_changing_it(
    values: list[float], k: int, data: st.DataObject
) -> None:
    """``positive_top`` with any seed (rows whose k-th best bounds the top from below) gives
    the answer it gives without one: ties in file order, zeros never, a NaN or infinite
    score set aside as the full path sets it aside."""
    from urna.index.bm25 import positive_top

    scores = np.array(values, dtype=np.float32)
    rows = data.draw(st.sets(st.integers(0, len(values) - 1)))
    seed = np.array(sorted(rows), dtype=np.int64)
    assert positive_top(scores, k, None, seed).tolist() == positive_top(scores, k).tolist()


def test_the_seed_is_the_rarest_term_held_by_k_chunks(tmp_path: Path) -> None:
    texts = ["apple pear", "apple plum", "apple pear fig", "apple"]
    index = BM25Index(memoryview(build_payload(texts)), len(texts))
    tokens = index.tokenize("apple pear fig kiwi")
    assert index.seed(tokens, 2).tolist() == [0, 2]  # pear: 2 chunks; fig: only 1
    assert index.seed(tokens, 4).tolist() == [0, 1, 2, 3]
    assert index.seed(tokens, 5) is None
