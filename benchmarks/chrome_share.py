"""How much of a documentation tree's indexed HTML text is site chrome, before and after.

Each page is extracted twice by the product's own loader: version 1 (the whole body, what
urna read before) and version 2 (the main content, ``ingest/html.py``). Chrome is measured
without trusting either extractor's idea of it, the way boilerplate detectors define it:

* **repeated blocks**: a block whose text appears on at least ``--repeat`` of the pages
  (navigation, "Previous topic", "Report a bug", a footer's copyright) counts as chrome on
  every page it is on;
* **permalink glyphs**: a heading that ends in ``¶``, ``#``, ``§`` or ``🔗`` counts its
  glyph.

A page refused as a page of links (a generated index, a table of contents) counts all its
version-1 text as chrome removed. The report gives, per version, the characters indexed,
the chrome characters and their share, and the headings that end in a glyph.

    python benchmarks/chrome_share.py /usr/share/doc/python3.11/html [--exclude all.html]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from urna.ingest.html import load_html

GLYPHS = ("¶", "#", "§", "🔗")


def blocks_of(data: bytes, version: int) -> tuple[list[str], list[str]] | None:
    """(block texts, heading titles) of one page, or None where the page is refused."""
    try:
        doc = load_html(data, "page", version)
    except ValueError:
        return None
    texts = [doc.text(b.start, b.end) for b in doc.blocks]
    return texts, [b.title for b in doc.blocks if b.kind == "heading"]


def measure(pages: list[Path], repeat: float) -> dict[str, dict[str, float]]:
    out = {}
    for version in (1, 2):
        read = {p: blocks_of(p.read_bytes(), version) for p in pages}
        seen: Counter[str] = Counter()
        for found in read.values():
            if found is not None:
                seen.update(set(found[0]))
        floor = max(2, int(repeat * len(pages)))
        total = chrome = glyphs = refused = 0
        for found in read.values():
            if found is None:
                refused += 1
                continue
            texts, headings = found
            for text in texts:
                total += len(text)
                if seen[text] >= floor:
                    chrome += len(text)
            for title in headings:
                if title.endswith(GLYPHS):
                    glyphs += 1
                    chrome += 1
        out[f"v{version}"] = {
            "pages": len(pages) - refused,
            "refused": refused,
            "chars": total,
            "chrome_chars": chrome,
            "chrome_share": round(chrome / total, 4) if total else 0.0,
            "headings_with_glyph": glyphs,
        }
    v1, v2 = out["v1"], out["v2"]
    out["removed"] = {
        "chars": v1["chars"] - v2["chars"],
        "share_of_v1": round((v1["chars"] - v2["chars"]) / v1["chars"], 4) if v1["chars"] else 0,
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--exclude", action="append", default=[], help="a file name to leave out")
    parser.add_argument("--repeat", type=float, default=0.2, help="share of pages (default 0.2)")
    args = parser.parse_args()
    pages = sorted(
        p
        for p in args.folder.rglob("*.htm*")
        if p.name not in args.exclude and "_sources" not in p.parts and p.is_file()
    )
    print(json.dumps({"folder": str(args.folder), **measure(pages, args.repeat)}, indent=1))


if __name__ == "__main__":
    main()
