"""Chinese and Japanese words: character bigrams (what urna's tokenizer does) against a
dictionary segmenter that ships its dictionary (jieba for Chinese, fugashi with unidic-lite
for Japanese), ranked by the same BM25 (bm25s) over Debian's manual pages.

    apt-get install manpages-ja manpages-zh groff-base
    pip install bm25s jieba fugashi unidic-lite    # benchmark dependencies only
    python benchmarks/cjk_segmentation.py /tmp/cjk

Each page (section 1; at most 12,000 bytes rendered, and every right page) is one document;
the questions are ``benchmarks/data/man-questions.json``'s, ten a language, and twenty more
in Japanese (``ja_more``, on other pages), each set written before any run. Both readings
keep urna's rules for everything outside CJK runs (Latin words, identifiers, stemming);
inside a run, one emits urna's characters and bigrams, the other the segmenter's words.
Printed: the rank of the right page (10 deep, "-" past it) and the mean reciprocal rank.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path

from man_questions import LIMIT, render

QUESTIONS = Path(__file__).resolve().parent / "data" / "man-questions.json"
MAN = Path("/usr/share/man")
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]+")
FOLDERS = {"ja": "ja", "zh": "zh_CN"}


def pages(out: Path, lang: str, right: list[str]) -> dict[str, str]:
    folder = out / lang
    for name in right:  # a right page the folder lacks (a question added since)
        source = MAN / FOLDERS[lang] / "man1" / f"{name}.1.gz"
        if folder.exists() and not (folder / f"{name}.txt").exists():
            (folder / f"{name}.txt").write_bytes(render(source))
    if not folder.exists():
        folder.mkdir(parents=True)
        for source in sorted((MAN / FOLDERS[lang] / "man1").glob("*.1.gz")):
            name = source.name.removesuffix(".1.gz")
            text = render(source)
            if len(text) <= LIMIT or name in right:
                (folder / f"{name}.txt").write_bytes(text)
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.txt"))}


def reader(lang: str) -> Callable[[str], list[str]]:
    """urna's tokens outside CJK runs, the segmenter's words inside them."""
    from urna.index.tokenize import tokenize

    if lang == "zh":
        import jieba

        jieba.setLogLevel(60)

        def words(run: str) -> list[str]:
            return [w for w in jieba.cut(run) if w.strip()]
    else:
        import fugashi

        tagger = fugashi.Tagger()

        def words(run: str) -> list[str]:
            return [w.surface for w in tagger(run)]

    def read(text: str) -> list[str]:
        out: list[str] = []
        at = 0
        for match in CJK.finditer(text):
            out += tokenize(text[at : match.start()]) + words(match.group(0))
            at = match.end()
        return out + tokenize(text[at:])

    return read


def ranks(read: Callable[[str], list[str]], docs: dict[str, str], asked: list[str],
          right: list[str]) -> list[int | None]:  # fmt: skip
    import bm25s

    names = list(docs)
    index = bm25s.BM25()
    index.index([read(docs[n]) for n in names], show_progress=False)
    out: list[int | None] = []
    for question, page in zip(asked, right, strict=True):
        found, _ = index.retrieve([read(question)], k=10, show_progress=False)
        top = [names[i] for i in found[0].tolist()]
        out.append(top.index(page) + 1 if page in top else None)
    return out


def main() -> None:
    from urna.index.tokenize import tokenize

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    asked = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    print("| lang | reading | ranks of the right page | MRR@10 |\n|---|---|---|---:|")
    sets = (("ja", "ja", "pages"), ("ja", "ja_more", "ja_more_pages"), ("zh", "zh", "zh_pages"))
    for lang, key, pages_key in sets:
        right = asked[pages_key]
        every = asked["pages"] + asked["ja_more_pages"] if lang == "ja" else right
        docs = pages(args.folder, lang, every)  # one corpus for both Japanese sets
        for label, read in (("bigrams (urna)", tokenize), ("dictionary", reader(lang))):
            found = ranks(read, docs, asked[key], right)
            mrr = sum(1 / r for r in found if r) / len(found)
            shown = " ".join(str(r) if r else "-" for r in found)
            print(f"| {key} | {label} | {shown} | {mrr:.3f} |", flush=True)


if __name__ == "__main__":
    main()
