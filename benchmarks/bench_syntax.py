"""What the query language costs: text-mode latency at 100,000 chunks for a plain query and
the same words with a phrase, an exclusion, a required word and a field, against the plain
query (the parse included), and the parse alone; and what typo tolerance costs: the same
queries with one word mistyped, tolerance on and off, and one look-up in a vocabulary of
1,000,000 terms (what a corpus of about a million chunks holds), against numpy's peer-less
floor of a dictionary miss.

    python benchmarks/bench_syntax.py [--n 100000] [--queries 30]

The chunks are real sentences (SciFact's abstracts, cut at sentence ends, repeated with a
number until there are ``--n``), so phrases and common words have realistic postings. A
phrase's candidates are the chunks whose postings hold all its words; each is read again
to decide, so a phrase of common words costs the most. Filters are computed once per
filter and kept (16 per file): the first query of a filter pays the reading, a repeated one
does not; both are shown. Ratios are against the plain query.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
import time
from pathlib import Path

import numpy as np

import urna
from typo_robustness import SEED, mistype
from urna import Query
from urna.index.tokenize import tokenize
from urna.search.syntax import parse_query

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def sentences(n: int) -> list[str]:
    out: list[str] = []
    with (DATA / "corpus.jsonl").open() as lines:
        texts = [json.loads(line)["text"] for line in lines]
    for round_ in range(1 + n // 40_000):
        for text in texts:
            for s in re.split(r"(?<=[.!?])\s+", text):
                if len(s) > 40:
                    out.append(s if round_ == 0 else f"{s} ({round_})")
                    if len(out) == n:
                        return out
    return out


def build(path: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    chunks = [
        {
            "text": s,
            "source_uri": f"s{i:06d}.txt",
            "byte_start": 0,
            "byte_end": len(s.encode()),
            "metadata": {"year": 2000 + i % 25},
        }
        for i, s in enumerate(sentences(n))
    ]
    vectors = rng.standard_normal((len(chunks), 32), dtype=np.float32)
    urna.build(path, chunks, embeddings=vectors, model="bench", model_hash="sha256:" + "0" * 64,
               chunker_version="bench/1", bm25=True)  # fmt: skip


FORMS = {
    "phrase": lambda w: f'"{w[0]} {w[1]}" {" ".join(w[2:])}',
    "exclusion": lambda w: f"{' '.join(w[:-1])} -{w[-1]}",
    "required": lambda w: f"+{w[0]} {' '.join(w[1:])}",
    "field": lambda w: f"{' '.join(w)} year:>=2015",
}


def timed(corpus: urna.Corpus, texts: list[str], typos: bool = True) -> tuple[float, float]:
    """Mean ms of each query's first run and of its run again right after (its filter
    kept)."""
    first = again = 0.0
    for text in texts:
        for n in range(2):
            t0 = time.perf_counter()
            corpus.run(Query(text=text, k=10, mode="text", typos=typos))
            took = time.perf_counter() - t0
            first, again = (first + took, again) if n == 0 else (first, again + took)
    return first / len(texts) * 1000, again / len(texts) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "syntax.urna"
        build(path, args.n)
        rng = np.random.default_rng(1)
        picked = sentences(args.n)
        words = []
        for i in rng.choice(len(picked), args.queries, replace=False).tolist():
            found = [w for w in re.findall(r"[a-z]{4,}", picked[i].lower()) if tokenize(w)]
            if len(found) >= 4:
                start = int(rng.integers(0, len(found) - 3))
                words.append(found[start : start + 4])
        plain = [" ".join(w) for w in words]
        with urna.open(path) as corpus:
            fields = corpus.schema()
            t0 = time.perf_counter()
            for text in plain * 100:
                parse_query(text, fields)
            parse_us = (time.perf_counter() - t0) / (len(plain) * 100) * 1e6
            timed(corpus, plain)  # warm: the index's pages read once
            base = timed(corpus, plain)[1]
            print(f"{corpus.n_chunks} chunks, {len(plain)} queries of 4 words, text mode")
            print(f"parse alone: {parse_us:.1f} us a query")
            print("| query | first (ms) | repeated (ms) | x plain |\n|---|---:|---:|---:|")
            print(f"| plain | {base:.2f} | {base:.2f} | 1.00 |")
            for name, form in FORMS.items():
                texts = [form(w) for w in words]
                first, again = timed(corpus, texts)
                print(f"| {name} | {first:.2f} | {again:.2f} | {again / base:.2f} |")
            rng_typo = random.Random(SEED)
            typed = [mistype(text, rng_typo) for text in plain]
            for label, typos in (("typo'd, tolerance off", False), ("typo'd, tolerance on", True)):
                first, again = timed(corpus, typed, typos=typos)
                print(f"| {label} | {first:.2f} | {again:.2f} | {again / base:.2f} |")
        lookup_ms = million_lookup()
        print(f"one typo look-up in 1,000,000 terms: {lookup_ms:.1f} ms")


def million_lookup() -> float:
    """The nearest-word look-up over a vocabulary of 1,000,000 stems (SciFact's words and
    made-up ones of the same lengths), the mean of 20 misspelt words."""
    from urna.search.typos import Vocabulary

    rng = np.random.default_rng(2)
    real = sorted({w for s in sentences(20_000) for w in re.findall(r"[a-z]{3,}", s.lower())})
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    made = {"".join(rng.choice(letters, int(n))) for n in rng.integers(4, 12, 1_000_000)}
    terms = sorted(set(real) | made)[:1_000_000]

    class Index:  # what Vocabulary reads of a BM25 index
        def __init__(self) -> None:
            self.term_index = {t: i for i, t in enumerate(terms)}
            self.indptr = np.arange(len(terms) + 1)

    vocabulary = Vocabulary([Index()])  # type: ignore[list-item]
    vocabulary.nearest("warmup", "warmup")  # the sorted list, made once
    probes = [mistype(w, random.Random(i)) for i, w in enumerate(real[:: max(1, len(real) // 20)])]
    t0 = time.perf_counter()
    for word in probes:
        vocabulary.nearest(word, word)
    return (time.perf_counter() - t0) / len(probes) * 1000


if __name__ == "__main__":
    main()
