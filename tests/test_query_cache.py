"""The query-embedding cache (``embed/query_cache.py``): a cached vector is bit for bit
the vector the model gives, misses of one call are embedded together, the cache stays
within its bound (least recently used out first), keys hold the model and precision, and
threads share it safely."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import needs_models
from urna.embed.query_cache import CachedQueries, cache_size


class Counting:
    """A deterministic embedder (a text's vector from its bytes) that counts its calls."""

    name = "counting"
    dim = 8
    model_hash = "sha256:" + "0" * 64
    precision = "float32"
    batching = ""
    max_tokens = 100

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def load(self) -> None:
        pass

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = [np.random.default_rng(list(t.encode()) or [0]).random(8) for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), 8)


def test_repeats_come_from_memory_and_equal_the_model() -> None:
    inner = Counting()
    cache = CachedQueries(inner, size=10)
    first = cache.embed(["a", "b"])
    again = cache.embed(["b", "c", "a"])
    assert inner.calls == [["a", "b"], ["c"]]  # one pass for the misses of a call
    assert np.array_equal(again, Counting().embed(["b", "c", "a"]))
    assert np.array_equal(again[[2, 0]], first)
    assert (cache.hits, cache.misses) == (2, 3)
    again[0] = 0  # a caller's array is its own
    assert np.array_equal(cache.embed(["b"]), first[1:])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from("abcdefgh"), max_size=40), st.integers(0, 5))
def test_bounded_least_recently_used_out(queries: list[str], size: int) -> None:
    inner = Counting()
    cache = CachedQueries(inner, size=size)
    recent: list[str] = []
    for q in queries:
        assert np.array_equal(cache.embed([q]), Counting().embed([q]))
        recent = [r for r in recent if r != q] + [q]
        assert len(cache) <= size
    kept = recent[-size:] if size else []
    before = len(inner.calls)
    for q in kept:
        cache.embed([q])
    assert len(inner.calls) == before  # the most recent `size` texts were all kept


def test_the_key_holds_the_model_and_its_precision() -> None:
    inner = Counting()
    cache = CachedQueries(inner, size=10)
    cache.embed(["a"])
    inner.model_hash = "sha256:" + "1" * 64
    cache.embed(["a"])
    inner.precision = "bfloat16"
    cache.embed(["a"])
    assert len(inner.calls) == 3


def test_threads_share_it() -> None:
    inner = Counting()
    cache = CachedQueries(inner, size=64)
    texts = [f"q{i % 16}" for i in range(400)]
    results: dict[int, np.ndarray] = {}

    def work(start: int) -> None:
        for i in range(start, len(texts), 8):
            results[i] = cache.embed([texts[i]])[0]

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    expected = Counting().embed(texts)
    assert all(np.array_equal(results[i], expected[i]) for i in range(len(texts)))
    assert cache.hits + cache.misses == len(texts) and len(cache) == 16


def test_size_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("URNA_QUERY_CACHE", "0")
    assert cache_size() == 0
    inner = Counting()
    off = CachedQueries(inner)
    off.embed(["a"])
    off.embed(["a"])
    assert len(inner.calls) == 2 and len(off) == 0
    monkeypatch.setenv("URNA_QUERY_CACHE", "many")
    assert cache_size() == 4096


@needs_models
def test_the_real_query_path_caches_the_same_bits() -> None:
    from urna.embed.hub import MINILM
    from urna.embed.registry import resolve_query

    embedder = resolve_query(MINILM, download=False)
    assert isinstance(embedder, CachedQueries)
    text = "how is a citation checked against its source"
    cold = embedder.inner.embed([text])
    assert np.array_equal(embedder.embed([text]), cold)
    hits = embedder.hits
    assert np.array_equal(embedder.embed([text, "another query"])[:1], cold)
    assert embedder.hits == hits + 1
