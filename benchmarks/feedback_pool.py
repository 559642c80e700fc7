"""Hybrid's feedback pass without a second scan: what it costs in quality.

A hybrid query runs its vector side twice: the first pass, then the feedback pass with the
query moved toward its best fused chunks (``search/feedback.py``), which scans every chunk
again. With ``feedback_pool`` F the feedback pass instead ranks, by the moved vector, the
first pass's best F x depth vector candidates and the text candidates (depth: the
candidates hybrid asks each method for), each scored exactly as the scan scores it; the
first pass's one scan serves both. This measures every set's nDCG@10 as ``urna eval``
computes it (200 chunks asked, documents by their best chunk) and, at k = 10, how many
queries get the same ten chunks as the full second scan gives, for F in 1, 2, 4
against 0 (the full scan). Chosen on scifact's train split; the other sets confirm.

    python benchmarks/feedback_pool.py [--json benchmarks/results/feedback-pool.json]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from tune_quality import DATA, SETS, eval_file

POOLS = (0, 1, 2, 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import urna
    from urna.evaluate.beir import evaluate, load_collection, mode_search
    from urna.evaluate.run import run_eval

    out: dict[str, dict[str, float]] = {}
    print("| set | " + " | ".join(f"F={f}" if f else "full scan" for f in POOLS) + " |")
    print("|---|" + "---:|" * len(POOLS))
    for name, folder_name, split, queries in SETS:
        folder = DATA / folder_name
        run_eval(folder, model="minilm", runs=())  # the eval file, built once
        collection = load_collection(
            folder, split=split, queries=folder / queries if queries else None
        )
        with urna.open(eval_file(folder_name)) as corpus:
            searcher = corpus._searcher  # type: ignore[attr-defined]
            recorded = searcher.fusion
            row: dict[str, float] = {}
            tens: dict[int, list[list[str]]] = {}
            for pool in POOLS:
                searcher.fusion = replace(recorded, feedback_pool=pool)
                scores = evaluate(corpus, collection, mode_search("hybrid"), depth=100)
                row[f"ndcg10_F{pool}"] = round(scores.ndcg10, 4)
                tens[pool] = [
                    [h.chunk_id for h in corpus.run(urna.Query(text=t, k=10, mode="hybrid")).hits]
                    for t in collection.queries.values()
                ]
            searcher.fusion = recorded
            for pool in POOLS[1:]:
                same = sum(a == b for a, b in zip(tens[0], tens[pool], strict=True))
                row[f"same_top10_F{pool}"] = round(same / len(tens[0]), 4)
        out[name] = row
        cells = [f"{row[f'ndcg10_F{p}']:.4f}" + (f" ({row[f'same_top10_F{p}']:.0%} same)"
                 if p else "") for p in POOLS]  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
