"""Build speed per model, one run: the first ``--records`` SciFact records built end to end
with an empty embedding cache by each model in turn (discover, load, chunk, embed, write,
verify), chunks per second and the ratio to MiniLM.

    python benchmarks/bench_models.py [--records 300] [--models minilm,e5-multilingual]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--models", default="minilm,e5-multilingual")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "scifact.jsonl"
        with (DATA / "corpus.jsonl").open(encoding="utf-8") as lines:
            records.write_text("".join(next(lines) for _ in range(args.records)), "utf-8")
        print(f"{args.records} SciFact records, empty cache, end to end")
        print("| model | chunks | seconds | chunks/s | x MiniLM time |\n|---|---:|---:|---:|---:|")
        first = None
        for model in args.models.split(","):
            out = Path(tmp) / f"{model}.urna"
            env = {**os.environ, "URNA_CACHE_DIR": str(Path(tmp) / f"cache-{model}")}
            cmd = [sys.executable, "-m", "urna", "build", str(records), "-o", str(out)]
            # Warm the model's own files (a distillation, an int8 export) outside the timing.
            subprocess.run([*cmd[:4], "--help"], check=True, capture_output=True, env=env)
            t0 = time.perf_counter()
            done = subprocess.run([*cmd, "--model", model], check=True, capture_output=True,
                                  env=env, text=True)  # fmt: skip
            took = time.perf_counter() - t0
            chunks = int(next(x for x in done.stdout.splitlines() if x.startswith("chunks:"))
                         .split()[-1])  # fmt: skip
            first = first or took
            print(f"| {model} | {chunks} | {took:.1f} | {chunks / took:.1f} | {took / first:.2f} |")


if __name__ == "__main__":
    main()
