"""``urna benchmark FILE``: latency percentiles per search path, and ANN recall against exact.

Queries are taken from the file itself, so the benchmark needs no model: the
stored vectors of a fixed sample of chunks (each nudged by a seeded noise so
that it is not its own exact twin) for the vector paths, and the first words
of the same chunks for BM25.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from urna.evaluate.metrics import percentile
from urna.search.protocol import Searchable as Corpus
from urna.search.request import Query


@dataclass
class PathTiming:
    path: str
    queries: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float


@dataclass
class BenchmarkReport:
    file: str
    chunks: int
    k: int
    paths: list[PathTiming] = field(default_factory=list)
    ann_recall: float | None = None
    hybrid_ann_recall: float | None = None  # hybrid by HNSW walks against exact hybrid

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _time(name: str, queries: list[Any], run: Callable[[Any], object]) -> PathTiming:
    run(queries[0])  # warm caches, not timed
    times = []
    for q in queries:
        t0 = time.perf_counter()
        run(q)
        times.append((time.perf_counter() - t0) * 1000)
    return PathTiming(
        name,
        len(times),
        statistics.median(times),
        percentile(times, 0.95),
        percentile(times, 0.99),
        statistics.fmean(times),
    )


def run_benchmark(
    corpus: Corpus, *, queries: int = 200, k: int = 10, ef: int = 100, seed: int = 0
) -> BenchmarkReport:
    rng = np.random.default_rng(seed)
    sample = rng.choice(corpus.n_chunks, size=min(queries, corpus.n_chunks), replace=False)
    vectors = [
        corpus.embedding(int(i)) + 0.05 * rng.standard_normal(corpus.dim).astype(np.float32)
        for i in sample
    ]
    report = BenchmarkReport(str(corpus.path), corpus.n_chunks, k)
    report.paths.append(
        _time("exact", vectors, lambda q: corpus.run(Query(vector=q, k=k, method="exact")))
    )
    if corpus.has_ann_index:
        report.paths.append(
            _time("hnsw", vectors, lambda q: corpus.run(Query(vector=q, k=k, method="ann", ef=ef)))
        )
        found = 0
        for q in vectors:
            exact = {h.ordinal for h in corpus.run(Query(vector=q, k=k, method="exact")).hits}
            found += len(
                exact
                & {h.ordinal for h in corpus.run(Query(vector=q, k=k, method="ann", ef=ef)).hits}
            )
        report.ann_recall = found / (k * len(vectors))
    if corpus.has_graph_index:
        report.paths.append(
            _time(
                "graph", vectors, lambda q: corpus.run(Query(vector=q, k=k, method="graph", ef=ef))
            )
        )
    if corpus.has_text_index:
        texts = [" ".join(corpus.chunk(int(i)).text.split()[:8]) for i in sample]
        report.paths.append(
            _time("bm25", texts, lambda t: corpus.run(Query(text=t, k=k, mode="text")))
        )
        _hybrid(report, corpus, list(zip(texts, vectors, strict=True)), k, ef)
    return report


def _hybrid(report: BenchmarkReport, corpus: Corpus, asked: list[Any], k: int, ef: int) -> None:
    """Hybrid with the caller's vector (the chunk's words and its nudged vector), exact and,
    with an HNSW index, by walks: their latency, and how much of the exact hybrid's top k
    the walks find."""

    def hybrid(pair: Any, index: str = "exact") -> set[int]:
        query = Query(text=pair[0], vector=pair[1], k=k, mode="hybrid", ef=ef, vector_index=index)
        return {h.ordinal for h in corpus.run(query).hits}

    report.paths.append(_time("hybrid", asked, hybrid))
    if not corpus.has_ann_index:
        return
    report.paths.append(_time("hybrid hnsw", asked, lambda pair: hybrid(pair, "ann")))
    found = sum(len(hybrid(p) & hybrid(p, "ann")) for p in asked)
    report.hybrid_ann_recall = found / max(1, sum(len(hybrid(p)) for p in asked))
