"""Ten natural questions on a real documentation tree: the rank of the right page in each
mode, and each mode's latency, for whatever urna is on ``PYTHONPATH`` (so two checkouts
compare on one machine in one run).

The questions and their right pages are in ``benchmarks/data/doc-questions.json``, one
list per tree: ``python`` for Debian's python3-doc (Sphinx HTML under
``/usr/share/doc/python3.11/html``), ``node`` for nodejs's API pages (``/usr/share/doc/
nodejs/api``, ``all.html`` left out). A rank is the place of the first hit from a right
page among the distinct pages of the top 20 hits (``-`` when none is there).

    urna build /usr/share/doc/python3.11/html -o py.urna
    python benchmarks/doc_questions.py py.urna python
    PYTHONPATH=../other/src python benchmarks/doc_questions.py py.urna python
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import urna
from urna.search.request import Query

QUESTIONS = Path(__file__).parent / "data" / "doc-questions.json"
ROOTS = ("python3.11/html/", "nodejs/api/")  # how an older build named the pages


def page(uri: str) -> str:
    for root in ROOTS:
        uri = uri.split(root)[-1]
    return uri.removeprefix("html/").removeprefix("api/")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("tree", choices=("python", "node"))
    args = parser.parse_args()
    questions = json.loads(QUESTIONS.read_text())[args.tree]
    with urna.open(args.file) as corpus:
        corpus.run(Query(text="warm up", k=10, mode="hybrid"))  # the model loaded
        for mode in ("text", "vector", "hybrid"):
            ranks = []
            for text, right in questions:
                pages = list(dict.fromkeys(page(h.source_uri) for h in corpus.run(
                    Query(text=text, k=20, mode=mode)).hits))  # fmt: skip
                ranks.append(next((i + 1 for i, p in enumerate(pages) if p in right), None))
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                for text, _ in questions * 3:
                    corpus.run(Query(text=text, k=10, mode=mode))
                times.append((time.perf_counter() - t0) / (len(questions) * 3) * 1000)
            at1 = sum(r == 1 for r in ranks)
            top3 = sum(r is not None and r <= 3 for r in ranks)
            shown = " ".join("-" if r is None else str(r) for r in ranks)
            print(f"{mode:6s} at #1 {at1}/10, top 3 {top3}/10, ranks {shown}, "
                  f"{statistics.median(times):.2f} ms/query")  # fmt: skip


if __name__ == "__main__":
    main()
