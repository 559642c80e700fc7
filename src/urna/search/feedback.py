"""Pseudo-relevance feedback for hybrid queries: Rocchio on the query vector.

A hybrid query fuses twice. The first pass fuses both methods; the mean vector of its
``docs`` best chunks, weighed ``weight``, is added to the query vector (Rocchio's rule with
no negative set), and the vector side is ranked again with it, then fused with the same text
candidates. Where the file records ``pool`` the second ranking scores the first pass's
vector and text candidates by the moved vector (its scan serves both passes:
``search/text.py``); else it scans every chunk again. The feedback comes from the *fused*
ranking: agreement of words and meaning is a better guess of relevance than either method
alone, so the vector side learns the words' sense of the query. Chosen on scifact's train
split with ``benchmarks/tune_quality.py`` among 2, 3, 5 chunks and weights 0.3, 0.5, 1.0: 5
chunks at 0.3 (train hybrid 0.733 -> 0.739; nfcorpus 0.366 -> 0.370, cranfield 0.428 ->
0.437, scifact test 0.727 -> 0.726).

BM25's counterpart, RM3 as Anserini ships it (10 chunks, 10 terms, original weight
0.5), lost 0.07 on scifact train from BM25's first pass and was not kept.

Builds record the rule in the manifest's ``fusion.feedback``; a file without it
runs one pass, as before.
"""

from __future__ import annotations

import numpy as np


def rocchio(q: np.ndarray, vectors: np.ndarray, weight: float) -> np.ndarray:
    """``q`` moved toward the mean of ``vectors`` (rows, unit length) by ``weight``, as a
    unit float32 vector; ``q`` itself when there is nothing to move toward."""
    if not len(vectors) or weight <= 0:
        return q
    moved = q.astype(np.float64) + weight * vectors.astype(np.float64).mean(axis=0)
    norm = float(np.linalg.norm(moved))
    return q if norm == 0 else (moved / norm).astype(np.float32)
