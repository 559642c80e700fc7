"""Fusing the vector and text rankings: calibrated confidence (default) or reciprocal rank.

Calibrated: each method's score goes to one 0..1 confidence first (vector:
the cosine clamped to [0, 1]; text: s / (s + C) for a BM25 score s), and a
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
from typing import Any, Literal, get_args

import numpy as np

from urna.errors import FormatError, QueryError
from urna.search.order import SourceOf, ranked

Fusion = Literal["calibrated", "rrf"]
FUSIONS: tuple[str, ...] = get_args(Fusion)
DEFAULT_FUSION: Fusion = "calibrated"
TEXT_CALIBRATION = 10.0  # C when it is fixed (files that record no text_scale)
RRF_K = 60
TextScale = Literal["fixed", "query_idf"]
TEXT_SCALES: tuple[str, ...] = get_args(TextScale)
# What a build records: C = 0.5 x the query's idf sum.
QUERY_IDF_CALIBRATION = 0.5
# What a build records: Rocchio feedback from the 5 best fused chunks, weight 0.3
# (``search/feedback.py``).
FEEDBACK_DOCS = 5
FEEDBACK_WEIGHT = 0.3
# What fusion scores a candidate by: what each method returned, or both methods' scores.
SCORES = ("returned", "complete")


@dataclass(frozen=True)
class FusionParams:
    """How hybrid fuses, as the file records it."""

    default: str = DEFAULT_FUSION
    text_calibration: float = TEXT_CALIBRATION
    rrf_k: int = RRF_K
    text_scale: str = "fixed"
    feedback_docs: int = 0  # Rocchio from the first pass's best fused chunks; 0: none
    feedback_weight: float = 0.0
    complete: bool = False  # each candidate scored by both methods, not only its finder

    @classmethod
    def for_build(cls) -> FusionParams:
        """What a build records now: calibrated, C scaled by the query's idf sum, Rocchio
        feedback from the fused first pass."""
        return cls(
            DEFAULT_FUSION, QUERY_IDF_CALIBRATION, RRF_K, "query_idf", FEEDBACK_DOCS,
            FEEDBACK_WEIGHT, True,
        )  # fmt: skip

    def to_manifest(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "default": self.default,
            "text_calibration": self.text_calibration,
            "rrf_k": self.rrf_k,
        }
        if self.text_scale != "fixed":
            out["text_scale"] = self.text_scale
        if self.feedback_docs:
            out["feedback"] = {
                "method": "rocchio",
                "docs": self.feedback_docs,
                "weight": self.feedback_weight,
            }
        if self.complete:
            out["scores"] = "complete"
        return out

    def calibration(self, idf_sum: float) -> float:
        """C for one query (its idf sum counts when the scale is query_idf)."""
        if self.text_scale == "query_idf":
            return self.text_calibration * idf_sum if idf_sum > 0 else self.text_calibration
        return self.text_calibration

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> FusionParams:
        """The manifest's ``fusion`` object, checked; the defaults when it has none."""
        recorded = manifest.get("fusion")
        if recorded is None:
            return cls()
        if not isinstance(recorded, Mapping):
            raise _bad(f"fusion must be an object, got {type(recorded).__name__}")
        default = recorded.get("default", DEFAULT_FUSION)
        if default not in FUSIONS:
            raise _bad(f"fusion.default {default!r} is not one of {', '.join(FUSIONS)}")
        scale = recorded.get("text_scale", "fixed")
        if scale not in TEXT_SCALES:
            raise _bad(f"fusion.text_scale {scale!r} is not one of {', '.join(TEXT_SCALES)}")
        docs, weight = _feedback(recorded.get("feedback"))
        scores = recorded.get("scores", "returned")
        if scores not in SCORES:
            raise _bad(f"fusion.scores {scores!r} is not one of {', '.join(SCORES)}")
        return cls(
            default,
            _positive(recorded, "text_calibration", TEXT_CALIBRATION),
            int(_positive(recorded, "rrf_k", RRF_K, integer=True)),
            scale,
            docs,
            weight,
            scores == "complete",
        )

    def choose(self, fusion: str | None) -> str:
        """The fusion a query asked for, or the file's default."""
        if fusion is None:
            return self.default
        if fusion not in FUSIONS:
            raise QueryError(f"invalid fusion {fusion!r}: expected one of {', '.join(FUSIONS)}")
        return fusion


def _bad(message: str) -> FormatError:
    return FormatError(f"manifest {message}", check=18, section="manifest")


def _feedback(recorded: Any) -> tuple[int, float]:
    """``fusion.feedback``: absent (no feedback) or {method: rocchio, docs, weight}."""
    if recorded is None:
        return 0, 0.0
    if not isinstance(recorded, Mapping) or recorded.get("method") != "rocchio":
        raise _bad(f"fusion.feedback must be an object with method 'rocchio', got {recorded!r}")
    docs = int(_positive(recorded, "docs", 0, integer=True, name="feedback.docs"))
    weight = _positive(recorded, "weight", 0, name="feedback.weight")
    if docs > 100 or weight > 10:
        raise _bad(f"fusion.feedback takes at most 100 docs and weight 10, got {recorded!r}")
    return docs, weight


def _positive(
    recorded: Mapping[str, Any],
    key: str,
    default: float,
    *,
    integer: bool = False,
    name: str | None = None,
) -> float:
    value = recorded.get(key, default)
    kinds = int if integer else int | float
    label = name or key
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value):
        kind = "an integer" if integer else "a number"
        raise _bad(f"fusion.{label} must be {kind}, got {value!r}")
    if value <= 0:
        raise _bad(f"fusion.{label} must be > 0, got {value}")
    return float(value)


@dataclass
class Fused:
    ordinal: int
    score: float
    ranks: dict[str, dict[str, float]] = field(default_factory=dict)


def confidence(method: str, score: float, calibration: float = TEXT_CALIBRATION) -> float:
    if method == "vector":
        return min(1.0, max(0.0, score))
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
                sum(confidence(m, r["score"], calibration) for m, r in entry.ranks.items()) / count
            )
    entries = list(table.values())
    order = ranked(
        np.array([e.ordinal for e in entries], dtype=np.int64),
        np.array([e.score for e in entries], dtype=np.float64),
        len(entries),
        source_of,
    )
    return [entries[j] for j in order.tolist()]
