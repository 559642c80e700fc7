"""Cross-lingual retrieval: SciFact's English corpus asked in six languages, each model.

The first 50 test queries, translated by hand (``benchmarks/data/scifact-translated``),
are scored in vector and hybrid modes against the English corpus with the test qrels, for
all-MiniLM-L6-v2 (the default) and multilingual-e5-small (``--model e5-multilingual``);
"kept" is a language's nDCG@10 over the English queries' with the same model. Each model's
corpus file is built once (``urna eval``'s cache).

    python benchmarks/cross_lingual.py [--models minilm,e5-multilingual] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
QUERIES = Path(__file__).resolve().parent / "data" / "scifact-translated"
LANGUAGES = ("en", "de", "fr", "es", "zh", "ja")
MODES = (("vector", "-"), ("hybrid", "calibrated"))


def main() -> None:
    from urna.evaluate.run import run_eval

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm,e5-multilingual")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    table: dict[str, dict[str, dict[str, float]]] = {}
    for model in args.models.split(","):
        for lang in LANGUAGES:
            report = run_eval(DATA, model=model, runs=MODES, queries=QUERIES / f"{lang}.jsonl")
            for row in report.rows:
                table.setdefault(f"{model} {row.mode}", {})[lang] = row.ndcg10
    print("| model, mode | " + " | ".join(LANGUAGES) + " |")
    print("|---|" + "---:|" * len(LANGUAGES))
    for name, by_lang in table.items():
        english = by_lang["en"] or 1.0
        cells = [f"{by_lang['en']:.3f}"] + [
            f"{by_lang[lang]:.3f} ({by_lang[lang] / english:.2f})" for lang in LANGUAGES[1:]
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.json is not None:
        args.json.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
