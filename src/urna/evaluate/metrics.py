"""nDCG@k, recall@k and MRR@k as trec_eval defines them (graded gains, log2 discount)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    dcg = sum(qrels.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranking[:k]))
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 2) for rank, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 100) -> float:
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    for rank, doc in enumerate(ranking[:k]):
        if qrels.get(doc, 0) > 0:
            return 1.0 / (rank + 1)
    return 0.0


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (q in [0, 1]); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
