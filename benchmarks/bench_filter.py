"""A where-filter keeping 1% of 100,000 chunks: k hits still, and its latency against the
unfiltered query, on the exact and the BM25 paths, with numpy over the same rows as the peer.

    python benchmarks/bench_filter.py [--n 100000] [--dim 256] [--queries 50]

Rows: the unfiltered query; the filtered query once its filter is known (the 16 latest
filters' rows are kept per file); the first query of a new filter (the rows computed); the
peer, numpy over the kept rows (a boolean mask precomputed, then matmul and argpartition).
Ratios above 1 mean slower than the unfiltered query.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import urna
from urna import Query

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def build(path: Path, n: int, dim: int) -> None:
    rng = np.random.default_rng(0)
    chunks = []
    for i in range(n):
        words = " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), 12))
        chunks.append({
            "text": f"chunk {i} {words}", "source_uri": f"doc{i // 10:05d}.txt",
            "byte_start": (i % 10) * 100, "byte_end": (i % 10) * 100 + 50,
            "metadata": {"group": i % 100, "year": 2000 + i % 25},
        })  # fmt: skip
    vectors = rng.standard_normal((n, dim), dtype=np.float32)
    urna.build(path, chunks, embeddings=vectors, model="bench", model_hash="sha256:" + "0" * 64,
               chunker_version="bench/1", bm25=True)  # fmt: skip


def per_query(fn, queries) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for q in queries:
            fn(q)
        best = min(best, (time.perf_counter() - t0) / len(queries))
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    vectors = list(rng.standard_normal((args.queries, args.dim), dtype=np.float32))
    texts = [" ".join(rng.choice(WORDS, 3)) for _ in range(args.queries)]
    keep = {"group": 7}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "filter.urna"
        t0 = time.perf_counter()
        build(path, args.n, args.dim)
        print(f"{args.n:,} x {args.dim} with metadata, built in {time.perf_counter() - t0:.1f} s")
        with urna.open(path) as corpus:
            matrix = np.asarray(corpus._c.matrix.rows(slice(0, args.n)))
            mask = np.arange(args.n) % 100 == 7
            kept_rows = np.flatnonzero(mask)

            def peer(q: np.ndarray) -> None:
                scores = matrix[kept_rows] @ (q / np.linalg.norm(q))
                np.argpartition(-scores, 10)[:10]

            found = corpus.run(Query(vector=vectors[0], k=10, method="exact", where=keep))
            assert found.k_returned == 10 and found.n_searched == args.n // 100
            assert all(h.metadata["group"] == 7 for h in found.hits)
            fresh = iter(range(10_000))
            rows = [
                ("exact, no filter", per_query(
                    lambda q: corpus.run(Query(vector=q, k=10, method="exact")), vectors)),
                ("exact, 1% kept (filter known)", per_query(
                    lambda q: corpus.run(Query(vector=q, k=10, method="exact", where=keep)),
                    vectors)),
                ("exact, 1% kept (a new filter)", per_query(
                    lambda q: corpus.run(Query(vector=q, k=10, method="exact", where={
                        "$and": [keep, {"year": {"$ne": 3000 + next(fresh)}}]})),
                    vectors[:5])),
                ("numpy over the kept rows (peer)", per_query(peer, vectors)),
                ("bm25, no filter", per_query(
                    lambda t: corpus.run(Query(text=t, k=10, mode="text")), texts)),
                ("bm25, 1% kept (filter known)", per_query(
                    lambda t: corpus.run(Query(text=t, k=10, mode="text", where=keep)), texts)),
            ]  # fmt: skip
            text_hits = corpus.run(Query(text=texts[0], k=10, mode="text", where=keep))
            assert text_hits.k_returned == 10
    base = {"exact": rows[0][1], "bm25": rows[4][1]}
    for name, ms in rows:
        ratio = ms / base["bm25" if name.startswith("bm25") else "exact"]
        print(f"  {name:<36} {ms:8.3f} ms/query  {ratio:5.2f}x unfiltered")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
