"""Build throughput and vector-search quality per embedder, on the shared BEIR collections.

For each embedder offered (the MiniLM transformer, the static model distilled
from it) and each collection (scifact, nfcorpus, cranfield; test splits):

* an end-to-end `urna build` of corpus.jsonl (discover, load, chunk, embed with
  an empty cache, write, verify) against the embedder alone on the same chunk
  texts, as chunks per second and the pipeline's overhead;
* nDCG@10, recall@100 and MRR@10 of vector search over the built file.

    python benchmarks/bench_build.py                       # everything (~15 min on 2 cores)
    python benchmarks/bench_build.py --models minilm-static --datasets scifact
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm,minilm-static")
    parser.add_argument("--datasets", default="scifact,nfcorpus,cranfield")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument(
        "--peer", default="scifact", help="datasets on which the embedder alone is timed too"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="urna-bench-build-") as tmp:
        # A private cache: every chunk is embedded for real, none comes from an earlier run.
        # The distilled static model is kept in it too (made once, ~15 s, not timed).
        os.environ["URNA_CACHE_DIR"] = str(Path(tmp) / "cache")
        from urna.build.spec import BuildSpec, Source
        from urna.build.writer import build_file
        from urna.embed.registry import resolve
        from urna.evaluate.beir import evaluate, load_collection, vector_search
        from urna.search.corpus import open_corpus

        rows = []
        for model in args.models.split(","):
            embedder = resolve(model)
            embedder.load()
            for name in args.datasets.split(","):
                folder = args.data / name
                out = Path(tmp) / f"{name}-{model}.urna"
                spec = BuildSpec(
                    sources=(Source(folder / "corpus.jsonl"),), output=out, base=folder
                )
                summary = build_file(spec, use_cache=True, embedder=embedder)
                row = {
                    "model": embedder.name,
                    "dataset": name,
                    "docs": summary.documents,
                    "chunks": summary.chunks,
                    "build_s": summary.seconds,
                    "build_chunks_per_s": summary.chunks / summary.seconds,
                    "stages_s": summary.timings,
                }
                with open_corpus(out) as corpus:
                    if name in args.peer.split(","):
                        texts = [corpus.chunk(i).text for i in range(corpus.n_chunks)]
                        t0 = time.perf_counter()
                        embedder.embed(sorted(set(texts), key=len))
                        alone = time.perf_counter() - t0
                        row["embed_alone_s"] = alone
                        row["embed_alone_chunks_per_s"] = len(texts) / alone
                        row["pipeline_overhead"] = summary.seconds / alone - 1
                    collection = load_collection(folder)
                    scores = evaluate(corpus, collection, vector_search)
                row.update(
                    {
                        "ndcg@10": scores.ndcg10,
                        "recall@100": scores.recall100,
                        "mrr@10": scores.mrr10,
                        "queries": scores.queries,
                        "query_p50_ms": statistics.median(scores.latency_ms),
                    }
                )
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)

    print(
        f"{'model':<40} {'dataset':<10} {'chunks':>7} {'build c/s':>10} {'alone c/s':>10} "
        f"{'overhead':>9} {'nDCG@10':>8} {'R@100':>6} {'MRR@10':>7} {'q p50':>8}"
    )
    for r in rows:
        alone = r.get("embed_alone_chunks_per_s")
        over = r.get("pipeline_overhead")
        print(
            f"{r['model']:<40} {r['dataset']:<10} {r['chunks']:>7} "
            f"{r['build_chunks_per_s']:>10.1f} {'-' if alone is None else f'{alone:.1f}':>10} "
            f"{'-' if over is None else f'{over * 100:+.1f}%':>9} {r['ndcg@10']:>8.3f} "
            f"{r['recall@100']:>6.3f} {r['mrr@10']:>7.3f} {r['query_p50_ms']:>6.1f}ms"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
