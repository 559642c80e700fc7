"""Fusing the vector and text rankings: calibrated confidence (default) or reciprocal rank.

Calibrated: each method's score goes to one 0..1 confidence first (vector:
the cosine clamped to [0, 1], or (cos - f) / (1 - f) clamped where the file records the
model's ``vector_floor`` f; text: s / (s + C) for a BM25 score s), and a
chunk's fused score is the mean over both methods, a method that did not
return it counting 0. RRF: the sum of 1 / (k + rank) over the methods.

Complete scores (``scores: "complete"``, what builds record): a
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
    top: int | None = None,
) -> list[Fused]:
    """All candidates of every method (name -> (ordinals, scores), best first), best fused
    score first, ties in the one order (``search/order.py``: by ``source_of``, then ordinal);
    with ``top``, only the first ``top`` of them (a caller that cuts to k builds no record
    of the rest).
    ``idf_sum`` is the text query's (for a scaled C). ``filled``: a method's own scores of
    candidates it did not return (complete scores; a score of 0 adds nothing).

    The scores are computed as arrays, each chunk's confidences added in the order its
    ``ranks`` hold them (a method's returned score, then a filled one), which for two
    methods gives the bits a chunk-by-chunk sum gives; the ranks are then written for each
    candidate in that order."""
    calibration = params.calibration(idf_sum)
    names = list(methods)
    given = [
        (np.asarray(o, dtype=np.int64), np.asarray(s, dtype=np.float64))
        for o, s in methods.values()
    ]
    every = np.unique(np.concatenate([o for o, _ in given])) if given else np.empty(0, np.int64)
    total = np.zeros(len(every), dtype=np.float64)
    at = [np.searchsorted(every, o) for o, _ in given]
    extra: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, (_, scores), where in zip(names, given, at, strict=True):
        total[where] += _scores(name, scores, ranks=len(scores), fusion=fusion, params=params,
                                calibration=calibration)  # fmt: skip
    for name, (ordinals, scores) in (filled or {}).items():
        o = np.asarray(ordinals, dtype=np.int64)
        v = np.asarray(scores, dtype=np.float64)
        where = np.searchsorted(every, o).clip(0, max(len(every) - 1, 0))
        mine = np.zeros(len(every), dtype=bool)
        mine[at[names.index(name)]] = True
        keep = (len(every) > 0) & (every[where] == o) & ~mine[where] & (v != 0)
        keep &= np.isfinite(v)
        where, v = where[keep], v[keep]
        extra[name] = (where, v)
        if fusion != "rrf":  # RRF fuses ranks: a filled-in score has none
            total[where] += _scores(name, v, ranks=0, fusion=fusion, params=params,
                                    calibration=calibration)  # fmt: skip
    fused = total / max(1, len(methods)) if fusion != "rrf" else total
    wanted = len(every) if top is None else min(top, len(every))
    order = ranked(every, fused, wanted, source_of).tolist()  # ties looked up up to top only
    return _entries(every, fused, order, names, given, at, extra)


def _scores(
    name: str, scores: np.ndarray, *, ranks: int, fusion: str, params: FusionParams,
    calibration: float,
) -> np.ndarray:  # fmt: skip
    """One method's part of each candidate's fused score: 1 / (k + rank) under RRF, else
    its confidence (``confidence``, element by element)."""
    if fusion == "rrf":
        return 1.0 / (params.rrf_k + np.arange(1, ranks + 1, dtype=np.float64))
    if name == "vector":
        floor = params.vector_floor
        x = (scores - floor) / (1.0 - floor) if floor else scores
        return np.fmin(1.0, np.fmax(x, 0.0))  # as min(1, max(0, x)): a NaN counts 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(scores > 0, scores / (scores + calibration), 0.0)


def _entries(
    every: np.ndarray,
    fused: np.ndarray,
    order: list[int],
    names: list[str],
    given: list[tuple[np.ndarray, np.ndarray]],
    at: list[np.ndarray],
    extra: Mapping[str, tuple[np.ndarray, np.ndarray]],
) -> list[Fused]:
    """The candidates at ``order`` as ``Fused``, in that order, each one's ranks in the
    order a method returned it, then the scores filled in."""
    ranks: dict[int, dict[str, dict[str, float]]] = {j: {} for j in order}
    for name, (_, scores), where in zip(names, given, at, strict=True):
        for rank, (j, s) in enumerate(zip(where.tolist(), scores.tolist(), strict=True), 1):
            if j in ranks:
                ranks[j][name] = {"rank": rank, "score": s}
    for name, (where, scores) in extra.items():
        beyond = len(given[names.index(name)][0])
        for j, s in zip(where.tolist(), scores.tolist(), strict=True):
            if j in ranks:
                ranks[j][name] = {"score": s, "beyond": beyond}
    ordinals, values = every.tolist(), fused.tolist()
    return [Fused(ordinals[j], values[j], ranks[j]) for j in order]
