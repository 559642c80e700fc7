"""Hybrid's feedback pass on the first pass's scan (``fusion.feedback.pool``): the vector
side is scanned once, for F x depth candidates; the feedback pass ranks those and the text
candidates by the moved vector, each scored as the exact search scores it, ties in file
order. A file that records no pool scans again, as before. Builds record pool 1."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from urna.errors import FormatError
from urna.format.fusion import FusionParams
from urna.index.bm25 import TextHits
from urna.search.text import Route, rank

N, DIM, K = 400, 16, 5


class _Embedder:
    name = "fixed"

    def __init__(self, q: np.ndarray) -> None:
        self.q = q

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.q for _ in texts])


def _run(params: FusionParams, matrix: np.ndarray, q: np.ndarray) -> tuple[object, list[int]]:
    asked: list[int] = []

    def vector_top(v: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        asked.append(depth)
        scores = matrix @ v
        order = np.lexsort((np.arange(N), -scores))[:depth]
        return order, scores[order]

    def text_top(_: str, depth: int) -> TextHits:
        ordinals = np.arange(0, N, 7)[:depth]  # chunks the words found, some far from q
        return TextHits(ordinals, np.linspace(9.0, 1.0, len(ordinals)), ["w"], 4.0)

    def fill(
        v: np.ndarray, cos_of: np.ndarray, bm25_of: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        return matrix[cos_of] @ v, np.ones(len(bm25_of))

    ranked = rank(
        "w",
        K,
        route=Route("hybrid", "", _Embedder(q)),
        dim=DIM,  # type: ignore[arg-type]
        vector_top=vector_top,
        text_top=text_top,
        fusion="calibrated",
        params=params,
        vectors=lambda ords: matrix[ords],
        fill=fill,
    )
    return ranked, asked


def test_the_feedback_pass_ranks_the_first_pass_candidates() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((N, DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    q = matrix[11] + 0.3 * rng.standard_normal(DIM).astype(np.float32)
    q /= np.linalg.norm(q)
    built = FusionParams.for_build()
    assert built.feedback_pool == 1 and built.to_manifest()["feedback"]["pool"] == 1
    pooled, asked = _run(built, matrix, q)
    depth = max(4 * K, 64)
    assert asked == [depth]  # one scan serves both passes
    _, asked_full = _run(replace(built, feedback_pool=0), matrix, q)
    assert asked_full == [depth, depth]  # without a pool the feedback pass scans again
    # The pooled vector side is the pool ranked by the moved vector.
    first = np.lexsort((np.arange(N), -(matrix @ q)))[:depth]
    texts = np.arange(0, N, 7)[:depth]
    pool = np.union1d(first, texts)
    ranks, ordinals = pooled.ranks, pooled.ordinals.tolist()  # type: ignore[attr-defined]
    vector = sorted(
        (r["vector"]["rank"], o, r["vector"]["score"])
        for r, o in zip(ranks, ordinals, strict=True)
        if "rank" in r.get("vector", {})
    )
    assert vector and all(o in pool for _, o, _ in vector)
    assert [s for *_, s in vector] == sorted((s for *_, s in vector), reverse=True)
    _, asked_wide = _run(replace(built, feedback_pool=4), matrix, q)
    assert asked_wide == [4 * depth]


@pytest.mark.parametrize("pool", [0, 17, 1.5, "one", True])
def test_a_bad_recorded_pool_is_refused(pool: object) -> None:
    fusion = FusionParams.for_build().to_manifest()
    fusion["feedback"]["pool"] = pool
    with pytest.raises(FormatError, match=r"feedback\.pool"):
        FusionParams.from_manifest({"fusion": fusion})


def test_a_recorded_pool_is_read_back() -> None:
    params = FusionParams.for_build()
    assert FusionParams.from_manifest({"fusion": params.to_manifest()}) == params
    old = params.to_manifest()
    del old["feedback"]["pool"]
    assert FusionParams.from_manifest({"fusion": old}).feedback_pool == 0  # scans again
