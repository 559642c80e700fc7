"""Text queries: which methods run (the mode), each method's candidates, and their fusion."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from urna.errors import ModelError, ModelGateError, QueryError
from urna.format.embeddings import Matrix
from urna.index.bm25 import BM25Index
from urna.search.exact import exact_top_k
from urna.search.fusion import FUSIONS, fuse
from urna.search.query import prepare

MODES = ("auto", "hybrid", "vector", "text")


@dataclass
class Ranked:
    """The outcome of one text query before it becomes hits."""

    mode: str
    score_type: str
    ordinals: list[int]
    scores: list[float]
    ranks: list[dict[str, dict[str, float]]]
    query_tokens: list[str] = field(default_factory=list)
    candidates: dict[str, int] = field(default_factory=dict)


def default_candidates(k: int) -> int:
    return max(4 * k, 64)


def resolve_mode(
    mode: str, *, has_bm25: bool, embed_ok: Callable[[], Exception | None]
) -> tuple[str, str]:
    """(the mode that runs, why auto left the vectors out). ``auto``: hybrid when the file
    has BM25 and the query can be embedded, else whichever of the two the file supports."""
    if mode not in MODES:
        raise QueryError(f"invalid mode {mode!r}: expected one of {', '.join(MODES)}")
    if mode in ("text", "hybrid") and not has_bm25:
        raise QueryError(
            f"mode {mode} needs a BM25 index (section 0x08), which this file does not have; "
            "rebuild it with the BM25 index, or use --mode vector"
        )
    if mode != "auto":
        return mode, ""
    if not has_bm25:
        return "vector", ""
    problem = embed_ok()
    return ("hybrid", "") if problem is None else ("text", f"vector path unavailable: {problem}")


def rank(
    text: str,
    k: int,
    *,
    mode: str,
    matrix: Matrix,
    bm25: BM25Index | None,
    embed: Callable[[str], np.ndarray],
    fusion: str = "calibrated",
    candidates: int | None = None,
) -> Ranked:
    if fusion not in FUSIONS:
        raise QueryError(f"invalid fusion {fusion!r}: expected one of {', '.join(FUSIONS)}")
    if candidates is not None and candidates <= 0:
        raise QueryError(f"invalid candidates: {candidates}")
    if mode == "vector":
        q = prepare(embed(text), matrix.dim)
        idx, scores = exact_top_k(matrix, q, k)
        return Ranked(
            mode,
            "cosine",
            idx.tolist(),
            scores.tolist(),
            [{"vector": {"rank": r, "score": float(s)}} for r, s in enumerate(scores.tolist(), 1)],
            candidates={"vector": len(idx)},
        )
    assert bm25 is not None
    if mode == "text":
        hits = bm25.search(text, k)
        return Ranked(
            mode,
            "bm25",
            hits.ordinals.tolist(),
            hits.scores.tolist(),
            [
                {"text": {"rank": r, "score": float(s)}}
                for r, s in enumerate(hits.scores.tolist(), 1)
            ],
            hits.query_tokens,
            {"text": len(hits.ordinals)},
        )
    depth = candidates or default_candidates(k)
    q = prepare(embed(text), matrix.dim)
    v_idx, v_scores = exact_top_k(matrix, q, min(depth, matrix.n))
    hits = bm25.search(text, depth)
    fused = fuse((v_idx, v_scores), (hits.ordinals, hits.scores), fusion=fusion)[:k]
    return Ranked(
        "hybrid",
        fusion,
        [f.ordinal for f in fused],
        [f.score for f in fused],
        [f.ranks for f in fused],
        hits.query_tokens,
        {"vector": len(v_idx), "text": len(hits.ordinals)},
    )


def embed_problem(check: Callable[[], object]) -> Callable[[], Exception | None]:
    def probe() -> Exception | None:
        try:
            check()
        except (ModelError, ModelGateError) as exc:
            return exc
        return None

    return probe
