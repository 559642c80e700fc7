"""Which hits are weaker matches: the rule the page's "weaker matches" fold and ``urna find``
share (the JSON APIs return every hit, as asked).

A hit is a **weaker match** when its score is at most 0 or below half the best hit's score
in the same answer (``WEAKER_BELOW``). The rule is relative because each mode scores on its
own scale (a cosine, a BM25 score, a fused confidence, a reciprocal rank), and half is where
a hit holds less than half the evidence the best one holds: in a calibrated hybrid, a chunk
that only one of the two methods found, with the best hit found by both. Hits come best
first, so the strong ones are a leading run: ``strong_count`` is its length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

WEAKER_BELOW = 0.5  # a hit scoring below this share of the best hit's score is weaker
RULE = "score below half the best hit's"


class Scored(Protocol):
    @property
    def score(self) -> float: ...


def strong_count(hits: Sequence[Scored]) -> int:
    """How many leading hits are strong matches (the rest are weaker)."""
    if not hits or hits[0].score <= 0:
        return 0
    floor = WEAKER_BELOW * hits[0].score
    for i, hit in enumerate(hits):
        if hit.score <= 0 or hit.score < floor:
            return i
    return len(hits)
