"""Choose hybrid fusion on scifact's train split, then confirm it on every shared set.

Each query's candidates come once from the product's own path (``candidates()``:
BM25 and exact cosine, the depth hybrid asks for at k = 200, as ``urna eval``),
then ``urna.search.fusion.fuse`` ranks them under each rule, and documents rank by
their best chunk. Rules: calibrated with C fixed (10, as SEARCH.md gives it),
calibrated with C = c x the query's idf sum (c on a grid), and RRF (k = 60).
The rule with the best nDCG@10 on scifact-train is chosen; the other sets only
confirm it (nothing is selected on a test split).

    python benchmarks/tune_fusion.py [--model minilm] [--json out.json]

The corpus files are those ``urna eval`` builds (reused from the cache folder,
built when missing).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
K = 200
SETS = (  # name, folder, split, query file (None: the split's)
    ("scifact-train", "scifact", "train", None),
    ("scifact", "scifact", "test", None),
    ("nfcorpus", "nfcorpus", "test", None),
    ("nfcorpus-verbose", "nfcorpus", "test", "alt_queries/queries_all.jsonl"),
    ("cranfield", "cranfield", "test", None),
)
GRID = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


def rules() -> dict[str, Any]:
    from urna.search.fusion import FusionParams

    out: dict[str, Any] = {"calibrated, C = 10 fixed": FusionParams()}
    for c in GRID:
        out[f"calibrated, C = {c} x idf sum"] = FusionParams(
            text_calibration=c, text_scale="query_idf"
        )
    out["rrf, k = 60"] = FusionParams(default="rrf")
    return out


def score_set(corpus: Any, collection: Any, params: dict[str, Any]) -> dict[str, float]:
    from urna.evaluate.beir import doc_id
    from urna.evaluate.metrics import mean, ndcg_at
    from urna.search.fusion import fuse
    from urna.search.query import prepare
    from urna.search.text import default_candidates

    embedder = corpus.embedder()
    found = corpus.candidates(None, None)
    depth = default_candidates(K)
    docs = [doc_id(corpus.chunk(i).source_uri) for i in range(corpus.n_chunks)]

    def ranking(ordinals: list[int]) -> list[str]:
        return list(dict.fromkeys(docs[i] for i in ordinals))

    scores: dict[str, list[float]] = {"text": [], "vector": [], **{n: [] for n in params}}
    queries = list(collection.queries.items())
    vectors = embedder.embed([text for _, text in queries])
    for (qid, text), q in zip(queries, vectors, strict=True):
        judged = collection.qrels[qid]
        vector = found.vector_top(prepare(q, corpus.dim), depth)
        hits = found.text_top(text, depth)
        scores["text"].append(ndcg_at(ranking(hits.ordinals[:K].tolist()), judged))
        scores["vector"].append(ndcg_at(ranking(vector[0][:K].tolist()), judged))
        methods = {"vector": vector, "text": (hits.ordinals, hits.scores)}
        for name, p in params.items():
            fusion = "rrf" if p.default == "rrf" else "calibrated"
            fused = fuse(methods, fusion=fusion, params=p, idf_sum=hits.idf_sum)[:K]
            scores[name].append(ndcg_at(ranking([f.ordinal for f in fused]), judged))
    return {name: mean(values) for name, values in scores.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--json", type=Path, help="Also write the table as JSON here.")
    args = parser.parse_args()
    from urna.evaluate.beir import load_collection
    from urna.evaluate.run import default_output, run_eval
    from urna.search.opening import open_path

    params = rules()
    table: dict[str, dict[str, float]] = {}
    for name, folder_name, split, queries in SETS:
        folder = DATA / folder_name
        run_eval(folder, model=args.model, runs=())  # build the eval file once, or reuse it
        collection = load_collection(
            folder, split=split, queries=folder / queries if queries else None
        )
        with open_path(default_output(folder, args.model)) as corpus:
            table[name] = score_set(corpus, collection, params)
        print(f"{name}: {len(collection.queries)} queries scored", flush=True)
    chosen = max(params, key=lambda rule: table["scifact-train"][rule])
    names = [s[0] for s in SETS]
    print("\n| rule | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for rule in ("text", "vector", *params):
        mark = " (chosen on scifact-train)" if rule == chosen else ""
        cells = " | ".join(f"{table[n][rule]:.4f}" for n in names)
        print(f"| {rule}{mark} | {cells} |")
    for n in names:
        best_alone = max(table[n]["text"], table[n]["vector"])
        verdict = "above" if table[n][chosen] > best_alone else "NOT above"
        print(f"{n}: chosen rule {table[n][chosen]:.4f}, {verdict} both methods alone")
    if args.json:
        args.json.write_text(json.dumps({"chosen": chosen, "table": table}, indent=2))


if __name__ == "__main__":
    main()
