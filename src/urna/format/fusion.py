"""The fusion recipe a file records (the manifest's ``fusion`` object): which fusion hybrid
uses by default, C and how it scales, RRF's k, the feedback pass and whether candidates get
complete scores. Build writes it and search reads it back, so it lives below both;
``search/fusion.py`` says what each parameter does to a query.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from urna.errors import FormatError

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
# ... ranking the first pass's best FEEDBACK_POOL x depth vector candidates and the text
# candidates by the moved vector: the first pass's scan serves both passes
# (``benchmarks/feedback_pool.py``).
FEEDBACK_POOL = 1
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
    vector_floor: float = 0.0  # the model's cosine of unrelated texts: confidence 0 there
    # F: the feedback pass ranks, by the moved vector, the first pass's best F x depth vector
    # candidates and the text candidates, instead of scanning again; 0: it scans every chunk
    feedback_pool: int = 0

    @classmethod
    def for_build(cls, vector_floor: float = 0.0) -> FusionParams:
        """What a build records now: calibrated, C scaled by the query's idf sum, Rocchio
        feedback from the fused first pass; ``vector_floor`` the model's (``embed/e5.py``)."""
        return cls(
            default=DEFAULT_FUSION,
            text_calibration=QUERY_IDF_CALIBRATION,
            rrf_k=RRF_K,
            text_scale="query_idf",
            feedback_docs=FEEDBACK_DOCS,
            feedback_weight=FEEDBACK_WEIGHT,
            complete=True,
            vector_floor=vector_floor,
            feedback_pool=FEEDBACK_POOL,
        )

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
            if self.feedback_pool:
                out["feedback"]["pool"] = self.feedback_pool
        if self.complete:
            out["scores"] = "complete"
        if self.vector_floor:
            out["vector_floor"] = self.vector_floor
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
        docs, weight, pool = _feedback(recorded.get("feedback"))
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
            _floor(recorded.get("vector_floor", 0.0)),
            pool,
        )

    def choose(self, fusion: str | None) -> str:
        """The fusion a query asked for (checked by ``Query``), or the file's default."""
        return self.default if fusion is None else fusion


def _floor(recorded: Any) -> float:
    """``fusion.vector_floor``: a number in [0, 1) (absent: 0)."""
    if isinstance(recorded, bool) or not isinstance(recorded, int | float):
        raise _bad(f"fusion.vector_floor must be a number in [0, 1), got {recorded!r}")
    if not 0 <= recorded < 1:
        raise _bad(f"fusion.vector_floor must be a number in [0, 1), got {recorded!r}")
    return float(recorded)


def _bad(message: str) -> FormatError:
    return FormatError(f"manifest {message}", check=18, section="manifest")


def _feedback(recorded: Any) -> tuple[int, float, int]:
    """``fusion.feedback``: absent (no feedback) or {method: rocchio, docs, weight}, with
    ``pool`` (1 to 16) where the feedback pass ranks the first pass's candidates."""
    if recorded is None:
        return 0, 0.0, 0
    if not isinstance(recorded, Mapping) or recorded.get("method") != "rocchio":
        raise _bad(f"fusion.feedback must be an object with method 'rocchio', got {recorded!r}")
    docs = int(_positive(recorded, "docs", 0, integer=True, name="feedback.docs"))
    weight = _positive(recorded, "weight", 0, name="feedback.weight")
    if docs > 100 or weight > 10:
        raise _bad(f"fusion.feedback takes at most 100 docs and weight 10, got {recorded!r}")
    pool = 0
    if "pool" in recorded:
        pool = int(_positive(recorded, "pool", 0, integer=True, name="feedback.pool"))
        if pool > 16:
            raise _bad(f"fusion.feedback.pool must be 1 to 16, got {recorded['pool']!r}")
    return docs, weight, pool


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
