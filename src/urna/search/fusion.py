"""Fusing the vector and text rankings: calibrated confidence (default) or reciprocal rank.

Calibrated: each method's score goes to one 0..1 confidence first (vector:
the cosine clamped to [0, 1], or (cos - f) / (1 - f) clamped where the file records the
model's ``vector_floor`` f; text: s / (s + C) for a BM25 score s), and a
chunk's fused score is the mean over both methods, a method that did not
return it counting 0. RRF: the sum of 1 / (k + rank) over the methods.

Complete scores (``scores: "complete"``, what builds record since December 5 2026): a
candidate that only one method returned gets the other method's own score too, computed
exactly for that chunk (its cosine from the stored row, its BM25 from its postings: the
bits the method would have returned it with), so a chunk ranked 401st by words still
counts its words. Only a chunk whose score is 0 (no query word) counts 0. On scifact's
train split, where it was chosen, hybrid rose 0.7385 -> 0.7405 (nfcorpus +0.004, scifact
+0.002, cranfield and the verbose queries within 0.001); a file that records nothing fuses
what the methods returned, as before. A filled-in score carries no rank, only ``beyond``:
how many candidates its method returned (its rank is past them). RRF fuses ranks, so it
uses only what the methods returned.

C is either fixed (``text_scale: "fixed"``, C = ``text_calibration``; SEARCH.md's
rule, C = 10) or scaled by the query (``text_scale: "query_idf"``, C =
``text_calibration`` x the sum of idf over the query's terms, repeats included).
A BM25 score grows with the number of query terms, so a fixed C saturates on
long queries (every good chunk's text confidence near 1) and weighs text too
little on short ones; the sum of idf is the score a chunk would approach by
holding every query term many times, so s / (s + c * idf_sum) asks what share
of the query a chunk matches, whatever the query's length. Builds record
``query_idf`` with c = 0.5, chosen on scifact's train split
(``benchmarks/tune_fusion.py``, now ``tune_quality.py``); a file that records no
``text_scale`` keeps C fixed.

The parameters (the default fusion, C, its scale and k) are read from the file's
manifest (``fusion``), where the build recorded them; a file without that object
gets the fixed defaults, and a recorded value that is not understood is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from urna.format.fusion import TEXT_CALIBRATION, FusionParams
from urna.search.order import SourceOf, ranked


@dataclass
class Fused:
    ordinal: int
    score: float
    ranks: dict[str, dict[str, float]] = field(default_factory=dict)


def confidence(
    method: str, score: float, calibration: float = TEXT_CALIBRATION, floor: float = 0.0
) -> float:
    if method == "vector":  # 0 at the model's cosine of unrelated texts, 1 at 1
        return min(1.0, max(0.0, (score - floor) / (1.0 - floor) if floor else score))
    return score / (score + calibration) if score > 0 else 0.0


def fuse(
    methods: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    fusion: str,
    params: FusionParams,
    idf_sum: float = 0.0,
    source_of: SourceOf | None = None,
    filled: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> list[Fused]:
    """All candidates of every method (name -> (ordinals, scores), best first), best fused
    score first, ties in the one order (``search/order.py``: by ``source_of``, then ordinal).
    ``idf_sum`` is the text query's (for a scaled C). ``filled``: a method's own scores of
    candidates it did not return (complete scores; a score of 0 adds nothing)."""
    calibration = params.calibration(idf_sum)
    table: dict[int, Fused] = {}
    for name, (ordinals, scores) in methods.items():
        for rank, (i, s) in enumerate(zip(ordinals.tolist(), scores.tolist(), strict=True), 1):
            entry = table.setdefault(i, Fused(i, 0.0))
            entry.ranks[name] = {"rank": rank, "score": float(s)}
    for name, (ordinals, scores) in (filled or {}).items():
        beyond = len(methods[name][0])
        for i, s in zip(ordinals.tolist(), scores.tolist(), strict=True):
            if i in table and name not in table[i].ranks and s != 0 and math.isfinite(s):
                table[i].ranks[name] = {"score": float(s), "beyond": beyond}
    count = max(1, len(methods))
    for entry in table.values():
        if fusion == "rrf":
            entry.score = sum(
                1.0 / (params.rrf_k + r["rank"]) for r in entry.ranks.values() if "rank" in r
            )
        else:
            entry.score = (
                sum(
                    confidence(m, r["score"], calibration, params.vector_floor)
                    for m, r in entry.ranks.items()
                )
                / count
            )
    entries = list(table.values())
    order = ranked(
        np.array([e.ordinal for e in entries], dtype=np.int64),
        np.array([e.score for e in entries], dtype=np.float64),
        len(entries),
        source_of,
    )
    return [entries[j] for j in order.tolist()]
