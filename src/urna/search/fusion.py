"""Fusing the vector and text rankings: calibrated confidence (default) or reciprocal rank.

Calibrated: each method's score goes to one 0..1 confidence first (vector:
the cosine clamped to [0, 1]; text: s / (s + C) for a BM25 score s, C = 10),
and a chunk's fused score is the mean over both methods, a method that did not
return it counting 0. RRF: the sum of 1 / (60 + rank) over the methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TEXT_CALIBRATION = 10.0
RRF_K = 60
FUSIONS = ("calibrated", "rrf")


@dataclass
class Fused:
    ordinal: int
    score: float
    ranks: dict[str, dict[str, float]] = field(default_factory=dict)


def _methods(
    vector: tuple[np.ndarray, np.ndarray] | None, text: tuple[np.ndarray, np.ndarray] | None
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {}
    if vector is not None:
        out["vector"] = vector
    if text is not None:
        out["text"] = text
    return out


def confidence(method: str, score: float, calibration: float = TEXT_CALIBRATION) -> float:
    if method == "vector":
        return min(1.0, max(0.0, score))
    return score / (score + calibration) if score > 0 else 0.0


def fuse(
    vector: tuple[np.ndarray, np.ndarray] | None,
    text: tuple[np.ndarray, np.ndarray] | None,
    *,
    fusion: str = "calibrated",
    calibration: float = TEXT_CALIBRATION,
) -> list[Fused]:
    """All candidates of both methods, best fused score first, ties in file order."""
    methods = _methods(vector, text)
    table: dict[int, Fused] = {}
    for name, (ordinals, scores) in methods.items():
        for rank, (i, s) in enumerate(zip(ordinals.tolist(), scores.tolist(), strict=True), 1):
            entry = table.setdefault(i, Fused(i, 0.0))
            entry.ranks[name] = {"rank": rank, "score": float(s)}
    count = max(1, len(methods))
    for entry in table.values():
        if fusion == "rrf":
            entry.score = sum(1.0 / (RRF_K + r["rank"]) for r in entry.ranks.values())
        else:
            entry.score = (
                sum(confidence(m, r["score"], calibration) for m, r in entry.ranks.items()) / count
            )
    return sorted(table.values(), key=lambda e: (-e.score, e.ordinal))
