"""What ``urna validate``'s deeper checks cost, against a full-check open of the same file.

Builds files of random unit vectors (dim 256) and short synthetic texts with BM25 and, up
to ``--hnsw-max`` chunks, HNSW and the chunk graph, then times (best of ``--repeat``):

* a full-check open (``urna.open``: every hash, the structural walk, the NaN walk);
* each part of validate on the open file: the chunk-id audit and the norm walk
  (``format/audit.py``), the BM25 rebuild, the HNSW reachability walk and sampled
  self-search, the chunk-graph recomputation and the bands' norms (``search/derived.py``).

    python benchmarks/bench_validate.py [--sizes 100000,1000000] [--hnsw-max 100000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import urna
from urna.format.audit import audit
from urna.search.derived import audit_derived, check_graph, check_hnsw

WORDS = np.array(
    ["install", "linux", "citation", "hash", "shard", "fusion", "cosine", "model", "gate", "chunk"]
)


def make(folder: Path, n: int, dim: int, ann: bool) -> Path:
    rng = np.random.default_rng(0)
    texts = [" ".join(row) for row in rng.choice(WORDS, size=(n, 8)).tolist()]
    chunks = [
        {
            "text": f"{text} {i}",
            "source_uri": f"bench/{i // 1000:06d}.txt",
            "byte_start": (i % 1000) * 64,
            "byte_end": (i % 1000) * 64 + 60,
        }
        for i, text in enumerate(texts)
    ]
    path = folder / f"validate-{n}.urna"
    urna.build(
        path,
        chunks,
        embeddings=rng.standard_normal((n, dim), dtype=np.float32),
        model="bench/random",
        chunker_version="bench/1",
        model_hash="sha256:" + "0" * 64,
        bm25=True,
        hnsw=ann,
        graph=ann,
    )
    return path


def timed(fn: object, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--hnsw-max", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print("| chunks | indexes | full open s | audit s | BM25 rebuild s | HNSW s | graph s |"
          " validate total s | validate / open |")  # fmt: skip
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="urna-bench-validate-") as tmp:
        for n in (int(x) for x in args.sizes.split(",")):
            ann = n <= args.hnsw_max
            path = make(Path(tmp), n, args.dim, ann)
            opened = timed(lambda p=path: urna.open(p).close(), args.repeat)
            with urna.open(path) as corpus:
                c, store = corpus._c, corpus._store
                parts = {
                    "audit": timed(lambda c=c: audit(c), args.repeat),
                    "bm25": timed(
                        lambda c=c, s=store, b=corpus._bm25: audit_derived(c, s, b, None, None),
                        args.repeat,
                    ),
                    "hnsw": timed(lambda c=c, h=corpus._hnsw: check_hnsw(c, h), args.repeat)
                    if ann
                    else 0.0,
                    "graph": timed(
                        lambda c=c, s=store, g=corpus._graph: check_graph(c, s, g), args.repeat
                    )
                    if ann
                    else 0.0,
                }
            total = sum(parts.values())
            print(
                f"| {n:,} | BM25{' + HNSW + graph' if ann else ''} | {opened:.2f} | "
                f"{parts['audit']:.2f} | {parts['bm25']:.2f} | {parts['hnsw']:.2f} | "
                f"{parts['graph']:.2f} | {total:.2f} | {total / opened:.1f}x |",
                flush=True,
            )
            path.unlink()


if __name__ == "__main__":
    main()
