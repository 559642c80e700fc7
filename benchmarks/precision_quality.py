"""Retrieval quality by embedding precision: float32, bfloat16 and int8 on every quality set.

``auto`` embeds in int8 on a CPU with VNNI only because its nDCG@10 holds here: for every
set and mode, int8 at most ``HOLDS`` below float32 (``embed/precision.py``). Each set and
precision is ``urna eval --precision P --json`` (the five sets of ``tune_quality.py``: the
scifact train split, the test splits of scifact, nfcorpus and cranfield, and nfcorpus's
verbose queries), one corpus file per set and precision, kept in ``--keep`` (reused when
there; the embedding cache makes a rebuild cheap).

    python benchmarks/precision_quality.py [--keep DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tune_quality import DATA, SETS

PRECISIONS = ("float32", "bfloat16", "int8")
HOLDS = 0.002  # nDCG@10 int8 may lose to float32 on a set and mode and still hold


def evaluated(name: str, folder: str, split: str, queries: str | None, precision: str,
              keep: Path) -> dict[str, float]:  # fmt: skip
    """``mode`` or ``mode (fusion)`` -> nDCG@10."""
    corpus = keep / f"{folder}-{precision}.urna"
    args = [sys.executable, "-m", "urna", "eval", str(DATA / folder), "--precision", precision,
            "-o", str(corpus), "--split", split, "--json", "--quiet"]  # fmt: skip
    if queries:
        args += ["--queries", str(DATA / folder / queries)]
    env = {**os.environ, "URNA_EMBED_PRECISION": precision}
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    rows = json.loads(done.stdout)["rows"]
    return {
        (r["mode"] if r["fusion"] == "-" else f"{r['mode']} ({r['fusion']})"): r["ndcg10"]
        for r in rows
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        keep = args.keep or Path(tmp)
        keep.mkdir(parents=True, exist_ok=True)
        table = {
            name: {p: evaluated(name, folder, split, queries, p, keep) for p in PRECISIONS}
            for name, folder, split, queries in SETS
        }
    print(
        "| set | mode | float32 | bfloat16 | int8 | int8 - float32 |\n|---|---|---:|---:|---:|---:|"
    )
    worst = 0.0
    for name, by in table.items():
        for mode in by["float32"]:
            a, b, c = (by[p][mode] for p in PRECISIONS)
            worst = min(worst, c - a)
            print(f"| {name} | {mode} | {a:.4f} | {b:.4f} | {c:.4f} | {c - a:+.4f} |")
    holds = worst >= -HOLDS
    print(f"int8's largest loss to float32: {-worst:.4f} (holds: {holds})")
    if args.json is not None:
        report = {"ndcg10": table, "largest_int8_loss": round(-worst, 4), "holds": holds}
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
