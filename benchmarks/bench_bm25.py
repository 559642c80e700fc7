"""BM25 queries per second, single thread: urna's index (scored from the memory map) vs bm25s.

Same collection (scifact, title + text), same tokens (urna's tokenizer feeds both),
same parameters (k1 1.5, b 0.75, Lucene idf), k = 10.

Then the chunked index as builds write it (the chunks of the file ``urna eval`` builds,
each with its neighbours at 1/2, payload version 2) against the same chunks alone and
against bm25s over the same chunk tokens: what the chunk context costs per query.

    python benchmarks/bench_bm25.py [--dataset scifact] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import bm25s

    import urna
    from urna.index.bm25 import positive_top
    from urna.index.tokenize import tokenize
    from urna.index.topk import top_k

    folder = DATA / args.dataset
    docs = [json.loads(x) for x in (folder / "corpus.jsonl").read_text().splitlines()]
    texts = [(d["title"] + "\n\n" + d["text"]).strip() for d in docs]
    queries = [json.loads(x)["text"] for x in (folder / "queries.jsonl").read_text().splitlines()]
    tokens = [tokenize(t) for t in texts]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bm25.urna"
        chunks = [
            {"text": t, "source_uri": f"{d['_id']}", "byte_start": 0, "byte_end": len(t.encode())}
            for d, t in zip(docs, texts, strict=True)
        ]
        urna.build(
            path,
            chunks,
            embeddings=np.ones((len(texts), 1)),
            model="none",
            model_hash="sha256:" + "0" * 64,
            chunker_version="bench/1",
            bm25=True,
        )
        corpus = urna.open(path)
        index = corpus.bm25
        assert index is not None
        reference = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
        reference.index(tokens, show_progress=False)
        q_tokens = [
            [t for t in dict.fromkeys(tokenize(q)) if t in reference.vocab_dict] for q in queries
        ]
        q_tokens = [q for q in q_tokens if q]

        def ours() -> None:  # what a query runs: the top among the rows the seed bounds
            for q in q_tokens:
                positive_top(index.scores(q), 10, None, index.seed(q, 10))

        def ours_every_score() -> None:  # before December 3: the top over every score
            for q in q_tokens:
                top_k(index.scores(q), 10)

        def ours_with_tokenizing() -> None:
            for q in queries:
                index.search(q, 10)

        def whole_path() -> None:
            for q in queries:
                corpus.search_text(q, k=10, mode="text")

        def theirs() -> None:
            for q in q_tokens:
                reference.retrieve([q], k=10, n_threads=1, show_progress=False)

        rows = []
        for name, fn in (
            ("urna (tokens given)", ours),
            ("urna (tokens given), top of every score", ours_every_score),
            ("urna (tokenizing each query)", ours_with_tokenizing),
            ("urna search_text mode=text (hits)", whole_path),
            ("bm25s .retrieve (tokens given)", theirs),
        ):
            fn()
            best = min(_time(fn) for _ in range(args.repeat))
            count = len(q_tokens) if "tokens given" in name else len(queries)
            rows.append((name, count / best))
        same = 0
        for q in q_tokens:
            _, ref_scores = reference.retrieve([q], k=10, show_progress=False)
            ours_scores = np.sort(index.scores(q))[::-1][:10]
            same += bool(np.allclose(ours_scores, ref_scores[0], atol=1e-4))
        corpus.close()
    base = rows[-1][1]
    print(f"{args.dataset}: {len(texts)} docs, {len(q_tokens)} queries, single thread")
    for name, qps in rows:
        print(f"  {name:<40} {qps:>9.0f} queries/s  {qps / base:>5.2f}x bm25s")
    print(f"  top-10 scores equal to bm25s (1e-4): {same}/{len(q_tokens)} queries")
    chunked(folder, queries, args.repeat)


def chunked(folder: Path, queries: list[str], repeat: int) -> None:
    """The eval file's chunks: in context (as built) vs alone vs bm25s, tokens given."""
    import bm25s

    import urna
    from urna.evaluate.run import default_output, run_eval
    from urna.index.bm25 import BM25Index, positive_top
    from urna.index.bm25_build import build_payload
    from urna.ingest.context import CONTEXT_RECIPE, bm25_texts

    run_eval(folder, model="minilm", runs=())  # build the eval file once, or reuse it
    with urna.open(default_output(folder, "minilm")) as corpus:
        chunks = [corpus.chunk(i) for i in range(corpus.n_chunks)]
    texts = bm25_texts(chunks, CONTEXT_RECIPE)
    uris = [c.source_uri for c in chunks]
    indexes = {
        m: BM25Index(memoryview(build_payload(texts, sources=uris, divisor=m)), len(texts))
        for m in (2, 0)
    }
    q_tokens = [indexes[2].tokenize(q) for q in queries]
    q_tokens = [q for q in q_tokens if q]
    reference = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    reference.index([indexes[0].tokenize(t) for t in texts], show_progress=False)
    known = [[t for t in q if t in reference.vocab_dict] for q in q_tokens]

    def run(m: int) -> None:
        index = indexes[m]
        for q in q_tokens:
            positive_top(index.scores(q), 10, None, index.seed(q, 10))

    def theirs() -> None:
        for q in known:
            if q:
                reference.retrieve([q], k=10, n_threads=1, show_progress=False)

    rows = []
    for name, fn in (
        ("urna, chunks in context (built)", lambda: run(2)),
        ("urna, chunks alone", lambda: run(0)),
        ("bm25s over the same chunks", theirs),
    ):
        fn()
        rows.append((name, len(q_tokens) / min(_time(fn) for _ in range(repeat))))
    nnz = {m: len(ix.doc_ids) for m, ix in indexes.items()}
    print(f"\nchunked: {len(texts)} chunks, {len(q_tokens)} queries, single thread, tokens given")
    print(f"  postings: in context {nnz[2]:,}, alone {nnz[0]:,} ({nnz[2] / nnz[0]:.2f}x)")
    for name, qps in rows:
        print(f"  {name:<32} {qps:>9.0f} queries/s  {qps / rows[2][1]:>5.2f}x bm25s")


def _time(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
