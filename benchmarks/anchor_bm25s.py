"""The text anchor: bm25s on every shared set, as issue 21 states it, nDCG@10.

bm25s 0.3 (k1 1.2 and 1.5, b 0.75, Lucene idf), its own tokenizer (English stop words,
the 33 of Lucene's list; Snowball English stemmer, PyStemmer), each document indexed
whole as title + text, top 100 per query. Judged as ``urna eval`` judges (test splits;
scifact's train split too; nfcorpus's verbose queries).

    python benchmarks/anchor_bm25s.py [--json benchmarks/results/anchor-bm25s.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from tune_quality import DATA, SETS  # the same sets, splits and query files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import bm25s
    import Stemmer

    from urna.evaluate.beir import load_collection
    from urna.evaluate.metrics import ndcg_at

    stemmer = Stemmer.Stemmer("english")

    def tokens(texts: list[str]) -> object:
        return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)

    print("| set | bm25s k1 1.2 | bm25s k1 1.5 |\n|---|---:|---:|")
    out: dict[str, dict[str, float]] = {"bm25s": {"version": bm25s.__version__}}  # type: ignore[dict-item]
    for name, folder_name, split, queries in SETS:
        folder = DATA / folder_name
        collection = load_collection(
            folder, split=split, queries=folder / queries if queries else None
        )
        ids, texts = [], []
        for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            ids.append(record["_id"])
            texts.append((record.get("title") or "") + " " + record["text"])
        cells = []
        for k1 in (1.2, 1.5):
            retriever = bm25s.BM25(k1=k1, b=0.75)
            retriever.index(tokens(texts), show_progress=False)
            scores = []
            for qid, text in collection.queries.items():
                query = tokens([text])
                if not query.vocab:  # type: ignore[attr-defined]
                    scores.append(0.0)
                    continue
                docs, found = retriever.retrieve(query, k=100, show_progress=False, n_threads=1)
                ranking = [ids[d] for d, s in zip(docs[0], found[0], strict=True) if s > 0]
                scores.append(ndcg_at(ranking, collection.qrels[qid]))
            cells.append(f"{np.mean(scores):.4f}")
            out.setdefault(name, {})[f"k1={k1}"] = round(float(np.mean(scores)), 4)
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
