"""The cold query path: the numpy encoder reads the model's own files, is used only after a
probe against the reference, ranks as the reference does, and imports no torch."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import needs_models
from tests.test_precision import QUERIES
from urna.embed import query as fastq
from urna.embed.hub import MINILM, bundled_minilm
from urna.embed.numpy_bert import NumpyBert, read_safetensors, why_unsupported
from urna.embed.registry import resolve_query
from urna.embed.transformer import TransformerEmbedder
from urna.errors import ModelError

pytestmark = needs_models
QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart" / "docs"


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_numpy_encoder_matches_the_reference() -> None:
    folder = Path(bundled_minilm())
    assert why_unsupported(folder) == ""
    reference = TransformerEmbedder(MINILM, folder)
    texts = [*QUERIES, *fastq.PROBES]
    with pytest.MonkeyPatch.context() as m:
        m.setenv("URNA_EMBED_PRECISION", "float32")
        ref = TransformerEmbedder(MINILM, folder).embed(texts)
    ours = NumpyBert(folder, reference.max_tokens).embed(texts)
    assert ours.dtype == np.float32 and ours.shape == ref.shape
    assert fastq.compare(ref, ours) >= fastq.MIN_COSINE


def test_probe_then_fast_path_ranks_as_the_reference(
    own_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = Path(bundled_minilm())
    out = tmp_path / "quickstart.urna"
    urna_build = subprocess.run(
        [sys.executable, "-m", "urna", "build", str(QUICKSTART), "-o", str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=600,
    )
    assert urna_build.returncode == 0, urna_build.stderr
    h = fastq.cached_model_hash(folder)
    record = fastq.probe_record(h)  # the build loaded the reference, so it probed
    assert record is not None and record["ok"] and record["min_cosine"] >= fastq.MIN_COSINE
    fast = resolve_query(MINILM, download=False)
    assert isinstance(fast, fastq.FastQueryEmbedder) and fast.model_hash == h
    monkeypatch.setenv(fastq.FAST_VARIABLE, "0")
    assert isinstance(TransformerEmbedder(MINILM, folder).query_embedder(), TransformerEmbedder)
    # The same top-10, by vector and fused, from the fast path and the fallback.
    tops: dict[str, list[list[str]]] = {}
    for label, env in (("fallback", "0"), ("fast", "1")):
        monkeypatch.setenv(fastq.FAST_VARIABLE, env)
        kind = fastq.FastQueryEmbedder if env == "1" else TransformerEmbedder
        assert isinstance(resolve_query(MINILM, download=False), kind)
        with urna.open(out) as corpus:
            tops[label] = [
                [h.chunk_id for h in corpus.search_text(q, k=10, mode=mode).hits]
                for q in QUERIES
                for mode in ("vector", "hybrid")
            ]
    assert tops["fast"] == tops["fallback"]
    # A cold process takes the fast path: no torch, no transformers.
    code = (
        "import sys, urna\n"
        f"c = urna.open({str(out)!r})\n"
        "r = c.search_text('how do I install urna on Linux?', k=3)\n"
        "print(r.mode, [m for m in ('torch', 'transformers', 'sentence_transformers')"
        " if m in sys.modules])\n"
    )
    env = {**os.environ, fastq.FAST_VARIABLE: "1"}
    cold = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout.split() == ["hybrid", "[]"]


def test_a_probe_that_drifts_keeps_the_reference(own_cache: Path) -> None:
    folder = Path(bundled_minilm())
    h = fastq.cached_model_hash(folder)
    embedder = TransformerEmbedder(MINILM, folder)
    exact = NumpyBert(folder, embedder.max_tokens)

    def drifted(texts: list[str]) -> np.ndarray:  # a reference the encoder no longer matches
        v = exact.embed(texts)
        v[:, :8] += 0.05
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    record = fastq.run_probe(folder, h, drifted, embedder.max_tokens)
    assert record["ok"] is False and record["min_cosine"] < fastq.MIN_COSINE
    assert fastq.probe_record(h) == record
    assert embedder.query_embedder() is embedder  # refused: the reference embeds queries
    assert fastq.run_probe(folder, h, exact.embed, embedder.max_tokens)["ok"] is True
    assert isinstance(embedder.query_embedder(), fastq.FastQueryEmbedder)


def test_the_cached_model_hash_follows_the_files(own_cache: Path, tmp_path: Path) -> None:
    from urna.embed.model_hash import model_hash

    folder = tmp_path / "model"
    shutil.copytree(bundled_minilm(), folder)
    first = fastq.cached_model_hash(folder)
    assert first == model_hash(folder) and fastq.cached_model_hash(folder) == first
    with open(folder / "README.md", "a") as handle:
        handle.write("\nedited\n")
    assert fastq.cached_model_hash(folder) == model_hash(folder) != first
    (folder / "extra.txt").write_text("new file")
    assert fastq.cached_model_hash(folder) == model_hash(folder)


def test_models_it_does_not_compute_take_the_reference(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(bundled_minilm(), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "hidden_act": "relu"}))
    assert "GELU" in why_unsupported(folder)
    assert TransformerEmbedder("x", folder).query_embedder().__class__ is TransformerEmbedder
    assert "configuration" in why_unsupported(tmp_path)


def test_forged_safetensors_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.safetensors"
    for raw in (
        b"",
        struct.pack("<Q", 1 << 40) + b"{}",
        struct.pack("<Q", 2) + b"{x",
        struct.pack("<Q", 62)
        + b'{"w": {"dtype": "F32", "shape": [1000], "data_offsets": [0, 4000]}}'[:62],
    ):
        bad.write_bytes(raw)
        with pytest.raises(ModelError):
            read_safetensors(bad)
    header = b'{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}'
    bad.write_bytes(struct.pack("<Q", len(header)) + header + np.arange(4, dtype="<f4").tobytes())
    assert read_safetensors(bad)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_concurrent_queries_share_passes_and_get_their_own_vectors() -> None:
    import threading

    folder = Path(bundled_minilm())
    encoder = NumpyBert(folder, 254)
    calls: list[int] = []

    def counted(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return encoder.embed(texts)

    shared = fastq.Coalescer(counted)
    texts = [f"question number {i} about {w}" for i, w in enumerate(QUERIES * 6)]
    alone = encoder.embed(texts)
    out: dict[int, np.ndarray] = {}
    barrier = threading.Barrier(len(texts))

    def ask(i: int) -> None:
        barrier.wait()
        out[i] = shared([texts[i]])[0]

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(out) == list(range(len(texts)))
    got = np.stack([out[i] for i in range(len(texts))])
    assert fastq.compare(alone, got) >= 0.99999  # each caller its own text's vector
    assert sum(calls) == len(texts) and len(calls) < len(texts)  # passes were shared

    def failing(texts: list[str]) -> np.ndarray:
        raise ModelError("boom")

    with pytest.raises(ModelError, match="boom"):
        fastq.Coalescer(failing)(["x"])
