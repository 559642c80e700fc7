"""``fuse`` computes the fused scores as arrays; each must be the bits the rule's
chunk-by-chunk definition gives (a chunk's confidences summed in the order its ranks hold
them, over the number of methods), its ranks the same dicts in the same key order, and the
order the same, ties included. The definition is written out here as the reference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.format.fusion import FusionParams
from urna.search.fusion import Fused, confidence, fuse
from urna.search.order import ranked


def _reference(
    methods: Any, *, fusion: str, params: FusionParams, idf_sum: float, filled: Any
) -> list[Fused]:
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
    )
    return [entries[j] for j in order.tolist()]


def _side(draw: Any, pool: list[int], dtype: type, low: float, high: float) -> Any:
    ordinals = draw(st.lists(st.sampled_from(pool), unique=True, max_size=len(pool)))
    values = draw(
        st.lists(st.floats(low, high, width=32), min_size=len(ordinals), max_size=len(ordinals))
    )
    order = np.argsort(-np.array(values, dtype=np.float64), kind="stable")
    return (np.array(ordinals, dtype=np.int64)[order], np.array(values, dtype=dtype)[order])


@st.composite
def cases(draw: Any) -> Any:
    pool = draw(st.lists(st.integers(0, 60), unique=True, min_size=1, max_size=40))
    vector = _side(draw, pool, np.float32, -1.0, 1.0)
    text = _side(draw, pool, np.float32, 0.0, 40.0)
    methods = {"vector": vector, "text": text}
    filled = None
    if draw(st.booleans()):
        only_text = np.setdiff1d(text[0], vector[0])
        only_vector = np.setdiff1d(vector[0], text[0])
        cos = draw(
            st.lists(
                st.floats(-1, 1, width=32) | st.just(0.0),
                min_size=len(only_text),
                max_size=len(only_text),
            )
        )
        bm = draw(
            st.lists(
                st.floats(0, 40, width=32) | st.just(0.0),
                min_size=len(only_vector),
                max_size=len(only_vector),
            )
        )
        filled = {
            "vector": (only_text, np.array(cos, dtype=np.float32)),
            "text": (only_vector, np.array(bm, dtype=np.float32)),
        }
    params = FusionParams(
        text_scale=draw(st.sampled_from(["fixed", "query_idf"])),
        text_calibration=draw(st.sampled_from([10.0, 0.5])),
        vector_floor=draw(st.sampled_from([0.0, 0.7])),
    )
    fusion = draw(st.sampled_from(["calibrated", "rrf"]))
    return methods, filled, params, fusion, draw(st.floats(0.0, 30.0))


@settings(max_examples=300, deadline=None)
@given(cases())
def test_fused_scores_are_the_definitions_bits(case: Any) -> None:
    methods, filled, params, fusion, idf_sum = case
    got = fuse(methods, fusion=fusion, params=params, idf_sum=idf_sum, filled=filled)
    want = _reference(methods, fusion=fusion, params=params, idf_sum=idf_sum, filled=filled)
    assert [f.ordinal for f in got] == [f.ordinal for f in want]
    assert [f.score for f in got] == [f.score for f in want]  # the same bits
    for a, b in zip(got, want, strict=True):
        assert list(a.ranks.items()) == list(b.ranks.items())  # keys in the same order
