"""Text queries: which methods run (the mode), each method's candidates, and their fusion."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from urna.embed.base import Embedder
from urna.errors import ModelError, ModelGateError, QueryError
from urna.format.fusion import FusionParams
from urna.index.bm25 import TextHits
from urna.search.feedback import rocchio
from urna.search.fusion import Fused, fuse
from urna.search.order import SourceOf, ranked
from urna.search.query import prepare


@dataclass
class Ranked:
    """The outcome of one text query before it becomes hits."""

    mode: str
    score_type: str
    ordinals: np.ndarray
    scores: np.ndarray
    ranks: list[dict[str, dict[str, float]]]
    query_tokens: list[str] = field(default_factory=list)
    candidates: dict[str, int] = field(default_factory=dict)
    pool: np.ndarray | None = None  # every candidate ranked before the cut to k


@dataclass(frozen=True)
class Route:
    """The mode that runs, why auto left the vectors out (or ""), and the query embedder."""

    mode: str
    note: str
    embedder: Embedder | None


def has_words(text: str) -> bool:
    """Whether a query holds a letter or a digit (in any script): one that does not
    ("?!...") gives BM25 nothing and the model only noise, so it is refused."""
    return any(ch.isalnum() for ch in text)


def default_candidates(k: int) -> int:
    return max(4 * k, 64)


def route(mode: str, *, has_bm25: bool, embedder: Callable[[], Embedder], explicit: bool) -> Route:
    """Pick the mode. ``auto``: hybrid when the file has BM25 and the query can be embedded,
    else whichever of the two the file supports. ``embedder()`` returns the gated embedder or
    raises; with an ``explicit`` model its failure is the answer even under auto."""
    if mode in ("text", "hybrid") and not has_bm25:
        raise QueryError(
            f"mode {mode} needs a BM25 index (section 0x08), which this file does not have; "
            "rebuild it with the BM25 index, or use --mode vector"
        )
    if mode == "text":
        return Route("text", "", None)
    if mode in ("vector", "hybrid") or not has_bm25 or explicit:
        chosen = mode if mode != "auto" else ("hybrid" if has_bm25 else "vector")
        return Route(chosen, "", embedder())
    try:
        return Route("hybrid", "", embedder())
    except (ModelError, ModelGateError) as exc:
        return Route("text", f"vector path unavailable: {exc}", None)


def _method_ranks(name: str, scores: np.ndarray) -> list[dict[str, dict[str, float]]]:
    return [{name: {"rank": r, "score": float(s)}} for r, s in enumerate(scores.tolist(), 1)]


VectorTop = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]
TextTop = Callable[[str, int], TextHits]
Vectors = Callable[[np.ndarray], np.ndarray]  # ordinals -> their stored unit vectors
# (query vector, ordinals to score by cosine, ordinals to score by BM25) -> both scores:
# each method's own score of candidates the other returned (complete scores).
Fill = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def rank(
    text: str,
    k: int,
    *,
    route: Route,
    dim: int,
    vector_top: VectorTop,
    text_top: TextTop | None,
    fusion: str,
    params: FusionParams,
    candidates: int | None = None,
    source_of: SourceOf | None = None,
    vectors: Vectors | None = None,
    fill: Fill | None = None,
    pool: bool = False,
    respelt: str | None = None,
) -> Ranked:
    """The k best chunks for ``text`` by the route's methods. ``vector_top(q, depth)`` and
    ``text_top(text, depth)`` give each method's best candidates (ordinals, scores) over
    whatever they search: one file, a filtered part of it, or every shard of a collection.
    With ``vectors`` and a file that records feedback, hybrid ranks its vector side again
    from the fused first pass (``search/feedback.py``): over every chunk, or over the first
    pass's candidates where the file records a pool. With ``fill`` and complete scores,
    each candidate is fused with both methods' scores (``search/fusion.py``). With ``pool``,
    the result keeps every candidate ranked before the cut to k (vector mode then ranks as
    many as hybrid would). ``respelt``: the query with its typos written as the corpus's
    words (``search/typos.py``); the vector side then searches by the mean of both
    readings' vectors, so a word wrongly read as a typo still counts half."""
    vector = None
    if route.embedder is not None:
        q = prepare(route.embedder.embed([text])[0], dim)
        if respelt is not None and respelt != text:  # the typed and the respelt reading
            q = prepare(q + prepare(route.embedder.embed([respelt])[0], dim), dim)
        wide = candidates or default_candidates(k)
        if route.mode != "vector":
            pooled = params.feedback_pool if params.feedback_docs and fill is not None else 0
            vector = vector_top(q, wide * max(1, pooled))  # the feedback pass's pool too
        else:  # vector alone: k, or as many as hybrid would when the pool is kept
            vector = vector_top(q, max(k, wide) if pool else k)
    if route.mode == "vector":
        assert vector is not None
        idx, scores = vector[0][:k], vector[1][:k]
        ranks = _method_ranks("vector", scores)
        kept = vector[0] if pool else None
        return Ranked(
            "vector", "cosine", idx, scores, ranks, candidates={"vector": len(idx)}, pool=kept
        )
    assert text_top is not None
    if route.mode == "text":
        hits = text_top(text, k)
        ranks = _method_ranks("text", hits.scores)
        found = {"text": len(hits.ordinals)}
        return Ranked("text", "bm25", hits.ordinals, hits.scores, ranks, hits.query_tokens, found)
    assert vector is not None
    depth = candidates or default_candidates(k)
    hits = text_top(text, depth)
    text_side = (hits.ordinals, hits.scores)
    wider, vector = vector, (vector[0][:depth], vector[1][:depth])  # the exact top depth

    def fused_with(q: np.ndarray, vector: tuple[np.ndarray, np.ndarray], top: int) -> list[Fused]:
        methods = {"vector": vector, "text": text_side}
        filled = None
        if fill is not None and params.complete and fusion == "calibrated":
            only_text = np.setdiff1d(text_side[0], vector[0])  # sorted, distinct
            only_vector = np.setdiff1d(vector[0], text_side[0])
            cosines, bm25 = fill(q, only_text, only_vector)
            filled = {"vector": (only_text, cosines), "text": (only_vector, bm25)}
        return fuse(
            methods,
            fusion=fusion,
            params=params,
            idf_sum=hits.idf_sum,
            source_of=source_of,
            filled=filled,
            top=None if pool else top,  # the pool keeps every candidate
        )

    fused = fused_with(q, vector, max(k, params.feedback_docs))
    if params.feedback_docs and vectors is not None and fused:
        best = np.array([f.ordinal for f in fused[: params.feedback_docs]], dtype=np.int64)
        moved = rocchio(q, vectors(best), params.feedback_weight)
        among = np.union1d(wider[0], text_side[0]) if params.feedback_pool and fill else None
        vector = (
            vector_top(moved, depth)
            if among is None
            else _reranked(moved, among, depth, fill, source_of)
        )
        fused = fused_with(moved, vector, k)
    everything = np.array([f.ordinal for f in fused], dtype=np.int64) if pool else None
    fused = fused[:k]
    return Ranked(
        "hybrid",
        fusion,
        np.array([f.ordinal for f in fused], dtype=np.int64),
        np.array([f.score for f in fused], dtype=np.float64),
        [f.ranks for f in fused],
        hits.query_tokens,
        {"vector": len(vector[0]), "text": len(hits.ordinals)},
        everything,
    )


def _reranked(
    q: np.ndarray, pool: np.ndarray, depth: int, fill: Fill | None, source_of: SourceOf | None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``depth`` best of ``pool`` by their exact cosines to ``q``, scored as the exact
    search scores them (``fill``), ties in the one order (``search/order.py``), so a file
    and a collection of the same chunks rank them alike."""
    assert fill is not None
    cosines = np.asarray(fill(q, pool, np.empty(0, dtype=np.int64))[0])
    best = ranked(pool, cosines, depth, source_of)
    return pool[best], cosines[best]
