"""What embedding the query adds to a cold command: ``urna ask`` against ``urna search-text
--mode text`` on the same file, each a whole new process (imports, open, query, print).

    python benchmarks/bench_cold_query.py [--runs 7]

Runs, interleaved: a BM25-only query (no model), ``ask`` on the numpy query encoder (now),
``ask`` with ``URNA_FAST_QUERY=0`` (sentence-transformers in float32, the reference path),
and ``ask`` on the same documents built with the static model (model2vec). Prints the median
wall time of each and the difference to the BM25-only command. The quickstart files are
built first; the cache then holds the model hash and the encoder's check against the shipped
references (a fresh cache adds both once: about 0.2 s).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "quickstart" / "spec.toml"
QUESTION = "how do I install urna on Linux?"


def timed(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, env={**os.environ, **env})
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    urna = [sys.executable, "-m", "urna"]
    with tempfile.TemporaryDirectory(prefix="urna-bench-cold-") as tmp:
        corpus = Path(tmp) / "quickstart.urna"
        static = Path(tmp) / "quickstart-static.urna"
        for target, model in ((corpus, []), (static, ["--model", "minilm-static"])):
            subprocess.run(
                [*urna, "build", str(SPEC), "-o", str(target), *model],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        commands = {
            "search-text --mode text (no model)": (
                [*urna, "search-text", str(corpus), QUESTION, "--mode", "text"],
                {},
            ),
            "ask (numpy query encoder, now)": ([*urna, "ask", str(corpus), QUESTION], {}),
            "ask (sentence-transformers, before)": (
                [*urna, "ask", str(corpus), QUESTION],
                {"URNA_FAST_QUERY": "0"},
            ),
            "ask, static model (minilm-static)": ([*urna, "ask", str(static), QUESTION], {}),
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for cmd, env in commands.values():  # warm the page cache once
            timed(cmd, env)
        for _ in range(args.runs):
            for name, (cmd, env) in commands.items():
                times[name].append(timed(cmd, env))
    base = statistics.median(times["search-text --mode text (no model)"])
    print(f"cold commands, median of {args.runs} (interleaved), this machine")
    print(f"{'command':<40} {'median s':>9} {'- text-only s':>14}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<40} {median:>9.3f} {median - base:>14.3f}")


if __name__ == "__main__":
    main()
