"""Typo robustness on the shared sets: each test query with one seeded typo, nDCG@10 in text
and hybrid modes with and without typo tolerance (``search/typos.py``), beside the clean
queries (which typo tolerance must not lower).

The typo: in one word of 5 or more letters (chosen at random), one edit at a random place:
a letter dropped, doubled, changed to a neighbour on the keyboard, or two neighbours
swapped, as people mistype. ``random.Random(SEED)`` per set, so every run types the same
typos. Queries with no word of 5 letters stay clean (they are counted as they are).

    python benchmarks/typo_robustness.py [--sets scifact,nfcorpus,cranfield]
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SEED = 44
ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
NEAR = {
    c: "".join(
        row[j]
        for r, row in enumerate(ROWS)
        for j in range(len(row))
        if abs(r - i) <= 1 and abs(j - col) <= 1 and row[j] != c
    )
    for i, line in enumerate(ROWS)
    for col, c in enumerate(line)
}


def mistype(query: str, rng: random.Random) -> str:
    """``query`` with one edit in one of its words of 5+ letters."""
    words = [m for m in re.finditer(r"[A-Za-z]{5,}", query)]
    if not words:
        return query
    m = rng.choice(words)
    word = m.group(0)
    at = rng.randrange(1, len(word) - 1)  # first and last letters are rarely mistyped
    kind = rng.choice(("drop", "double", "near", "swap"))
    if kind == "drop":
        typed = word[:at] + word[at + 1 :]
    elif kind == "double":
        typed = word[:at] + word[at] + word[at:]
    elif kind == "near" and NEAR.get(word[at].lower()):
        typed = word[:at] + rng.choice(NEAR[word[at].lower()]) + word[at + 1 :]
    else:
        typed = word[: at - 1] + word[at] + word[at - 1] + word[at + 1 :]
    return query[: m.start()] + typed + query[m.end() :]


def main() -> None:
    from urna.evaluate.beir import doc_id, load_collection
    from urna.evaluate.metrics import ndcg_at
    from urna.evaluate.run import default_output, run_eval
    from urna.search.opening import open_path
    from urna.search.request import Query

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="scifact,nfcorpus,cranfield")
    args = parser.parse_args()
    print("| set | mode | clean | clean, typos read | typo'd | typo'd, typos read | kept |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in args.sets.split(","):
        folder = DATA / name
        run_eval(folder, model="minilm", runs=())  # the eval file, built once
        collection = load_collection(folder, split="test")
        rng = random.Random(SEED)
        typed = {qid: mistype(text, rng) for qid, text in collection.queries.items()}
        with open_path(default_output(folder, "minilm")) as corpus:
            for mode in ("text", "hybrid"):
                scores: dict[str, list[float]] = {}
                for qid, text in collection.queries.items():
                    for label, asked, typos in (
                        ("clean", text, False),
                        ("clean+", text, True),
                        ("typo", typed[qid], False),
                        ("typo+", typed[qid], True),
                    ):
                        hits = corpus.run(Query(text=asked, k=100, mode=mode, typos=typos)).hits
                        docs = list(dict.fromkeys(doc_id(h.source_uri) for h in hits))
                        scores.setdefault(label, []).append(ndcg_at(docs, collection.qrels[qid]))
                m = {k: float(np.mean(v)) for k, v in scores.items()}
                kept = m["typo+"] / m["clean"] if m["clean"] else 0.0
                print(
                    f"| {name} | {mode} | {m['clean']:.4f} | {m['clean+']:.4f} | {m['typo']:.4f} "
                    f"| {m['typo+']:.4f} | {kept:.3f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
