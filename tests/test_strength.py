"""The weaker-matches rule (``search/strength.py``) that the page and ``urna find`` share."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from urna.search.strength import WEAKER_BELOW, strong_count


@dataclass(frozen=True)
class Scored:
    score: float


def test_the_rule_on_examples() -> None:
    hits = [Scored(s) for s in (0.6, 0.31, 0.3, 0.2)]
    assert strong_count(hits) == 3  # 0.3 is exactly half: not below it, so strong
    assert strong_count([Scored(0.3), Scored(0.2)]) == 2
    assert strong_count([Scored(2.0), Scored(0.9)]) == 1
    assert strong_count([]) == 0
    assert strong_count([Scored(0.0), Scored(-0.1)]) == 0  # no evidence: all weaker
    assert strong_count([Scored(-0.05)]) == 0


@given(st.lists(st.floats(-1, 50, allow_nan=False), max_size=30))
def test_strong_hits_are_a_leading_run_above_half_the_best(scores: list[float]) -> None:
    hits = [Scored(s) for s in sorted(scores, reverse=True)]
    n = strong_count(hits)
    assert all(h.score > 0 and h.score >= WEAKER_BELOW * hits[0].score for h in hits[:n])
    if n < len(hits):
        weak = hits[n]
        assert weak.score <= 0 or weak.score < WEAKER_BELOW * hits[0].score
