"""Exact search against plain numpy, ties in file order, every dtype."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna
from tests.conftest import PLACEHOLDER, one_hot_chunks
from urna.index.topk import top_k


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_exact_matches_numpy_reference(random_file: Callable[..., Path], dtype: str) -> None:
    path = random_file(n=300, dim=24, dtype=dtype, seed=3)
    rng = np.random.default_rng(7)
    with urna.open(path) as corpus:
        stored = np.stack([corpus.embedding(i) for i in range(corpus.n_chunks)])
        for _ in range(20):
            q = rng.standard_normal(24)
            result = corpus.search(q, k=10)
            unit = (q / np.linalg.norm(q)).astype(np.float32)
            ref = stored.astype(np.float64) @ unit.astype(np.float64)
            want = np.argsort(-ref, kind="stable")[:10]
            got = [h.ordinal for h in result.hits]
            assert got == want.tolist()
            assert np.allclose([h.score for h in result.hits], ref[want], atol=1e-5)


def test_ties_keep_file_order(tmp_path: Path) -> None:
    path = tmp_path / "ties.urna"
    urna.build(
        path,
        one_hot_chunks(12, dim=4),
        model="demo",
        model_hash=PLACEHOLDER,
        chunker_version="demo-chunker/1",
    )
    with urna.open(path) as corpus:
        result = corpus.search([0, 1, 0, 0], k=2)
        assert [h.ordinal for h in result.hits] == [1, 5]
        result = corpus.search([0, 1, 0, 0], k=12)
        assert [h.ordinal for h in result.hits] == [1, 5, 9, 0, 2, 3, 4, 6, 7, 8, 10, 11]


def test_k_larger_than_chunks_returns_all(five_file: Path) -> None:
    with urna.open(five_file) as corpus:
        result = corpus.search([1, 0, 0, 0], k=50)
        assert result.k_returned == 5 and not result.truncated and result.k_requested == 50


@pytest.mark.parametrize("n,k", [(1, 1), (10, 3), (1000, 7), (1000, 999), (50, 50)])
def test_top_k_with_many_ties(n: int, k: int) -> None:
    rng = np.random.default_rng(n * 31 + k)
    scores = rng.integers(0, 4, n).astype(np.float32)
    want = sorted(range(n), key=lambda i: (-scores[i], i))[:k]
    assert top_k(scores, k).tolist() == want


def test_selection_from_the_left_is_the_plain_selection() -> None:
    """``largest``, ``kth_largest`` and ``top_k`` select from the left of the negated scores
    (numpy's selection from the right crawls over a crowd of equal values): the same values
    as the plain form, with crowds of zeros and -inf, with a NaN (largest, as numpy counts
    it) and an inf, and a NaN or inf never ranks."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from urna.index.topk import kth_largest, largest

    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(st.sampled_from([0.0, -np.inf, np.inf, np.nan, 1.0, 0.5, -2.0]), min_size=1)
        | st.lists(st.floats(-4, 4, width=32), min_size=1),
        st.integers(1, 40),
    )
    def check(values: list[float], k: int) -> None:
        a = np.asarray(values, dtype=np.float32)
        k = min(k, len(a))
        plain = np.partition(a, len(a) - k)
        assert np.array_equal(np.sort(largest(a, k)), np.sort(plain[len(a) - k :]), equal_nan=True)
        assert np.array_equal(kth_largest(a, k), plain[len(a) - k], equal_nan=True)
        finite = [i for i in range(len(a)) if np.isfinite(a[i])]
        want = sorted(finite, key=lambda i: (-a[i], i))[:k]
        assert top_k(a, k).tolist() == want

    check()


def test_query_need_not_be_unit_length(five_file: Path) -> None:
    with urna.open(five_file) as corpus:
        assert corpus.search([123.0, 0, 0, 0], k=1).hits[0].score == pytest.approx(1.0)
        # Huge finite values must not overflow while normalizing.
        assert corpus.search([3e38, 3e38, 0, 0], k=1).hits[0].score == pytest.approx(2**-0.5)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    kinds=st.lists(st.sampled_from(["float32", "float16", "int8"]), min_size=1, max_size=5),
    many=st.booleans(),
)
def test_scores_of_many_shards_in_one_pass_are_each_shards_bits(
    seed: int, kinds: list[str], many: bool
) -> None:
    """A pooled rerank scores a few rows of each shard in one pass (``scores_of``): each
    row's score is ``row_scores``'s bits for it, whatever the shards' precisions, and past
    one block of rows as well."""
    from urna.format.embeddings import Matrix
    from urna.format.layout import Encoding
    from urna.index.rowscore import BLOCK, row_scores, scores_of

    rng = np.random.default_rng(seed)
    dim = int(rng.integers(1, 40))
    parts = []
    for kind in kinds:
        n = int(rng.integers(1, 50))
        values = rng.standard_normal((n, dim)).astype(np.float32)
        if kind == "float32":
            matrix = Matrix(Encoding.RAW, values, None)
        elif kind == "float16":
            matrix = Matrix(Encoding.FLOAT16, values.astype(np.float16), None)
        else:
            ints = rng.integers(-127, 128, (n, dim)).astype(np.int8)
            matrix = Matrix(Encoding.INT8, ints, rng.random(n).astype(np.float32) / 127)
        size = BLOCK // len(kinds) + 10 if many else int(rng.integers(0, 2 * n))
        parts.append((matrix, np.sort(rng.integers(0, n, size))))
    q = rng.standard_normal(dim).astype(np.float32)
    want = np.concatenate([row_scores(m, rows, q) for m, rows in parts])
    got = scores_of(parts, q)
    assert got.dtype == np.float32 and got.tobytes() == want.tobytes()


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), k=st.sampled_from([1, 10, 64, 400]), filtered=st.booleans())
def test_the_int8_shadow_gives_the_float32_scans_answer_bit_for_bit(
    seed: int, k: int, filtered: bool
) -> None:
    """A float32 matrix's int8 copy (``index/shadow.py``) only chooses candidates: the top k
    is the exact scan's, ordinals and score bits, ties in file order, on rows built to tie
    and to sit within the copy's rounding of each other."""
    from urna.format.embeddings import Matrix
    from urna.format.layout import Encoding
    from urna.index.exact import exact_top_k
    from urna.index.rowscore import row_scores
    from urna.index.shadow import AFTER, shadow, shadow_scores, shadow_top_k

    rng = np.random.default_rng(seed)
    n, dim = 40_000, 24
    values = rng.standard_normal((n, dim)).astype(np.float32)
    values[rng.integers(0, n, 500)] = values[7]  # exact ties
    near = rng.integers(0, n, 500)
    values[near] = values[11] + rng.standard_normal((500, dim)).astype(np.float32) * 1e-4
    values /= np.linalg.norm(values, axis=1, keepdims=True)
    allowed = np.sort(rng.choice(n, n // 2, replace=False)) if filtered else None
    queries = [values[11], values[7], rng.standard_normal(dim).astype(np.float32)]
    shadowed = Matrix(Encoding.RAW, values, None)
    plain = Matrix(Encoding.RAW, values.copy(), None)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("URNA_SHADOW", "0")
        want = [exact_top_k(plain, q, k, allowed) for q in queries]
    for _ in range(AFTER):
        exact_top_k(shadowed, queries[0], k, allowed)
    assert shadow(shadowed) is not None
    assert all(shadow_top_k(shadowed, q, k, allowed) is not None for q in queries)  # it ran
    for q in queries:  # a collection's cut across shards: every score within the bound
        found = shadow_scores(shadowed, q)
        assert found is not None
        approx, bound = found
        exact = row_scores(plain, np.arange(n), q)
        assert np.all(np.abs(approx.astype(np.float64) - exact) <= bound)
    for q, (ids, scores) in zip(queries, want, strict=True):
        got_ids, got_scores = exact_top_k(shadowed, q, k, allowed)
        assert got_ids.tolist() == ids.tolist()
        assert got_scores.tobytes() == scores.tobytes()
