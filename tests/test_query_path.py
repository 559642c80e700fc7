"""The cold query path: the numpy encoder reads the model's own files, is used only for a
model whose shipped reference vectors it reproduces, ranks and scores as the reference does
(float32 both), and imports no torch."""

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
from urna.embed.query_cache import CachedQueries
from urna.embed.registry import resolve_query
from urna.embed.transformer import Float32Query, TransformerEmbedder
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


def test_the_fast_path_is_chosen_by_the_model_alone(
    own_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an empty cache and nothing run before, the default model takes the numpy encoder
    (its shipped reference vectors match); URNA_FAST_QUERY=0 takes the reference in float32;
    both rank alike and score within 1e-6; a cold process imports no torch."""
    folder = Path(bundled_minilm())
    h = fastq.cached_model_hash(folder)
    assert fastq.shipped_reference(h) is not None
    fast = resolve_query(MINILM, download=False)
    assert isinstance(fast, CachedQueries) and fast.model_hash == h
    assert isinstance(fast.inner, fastq.FastQueryEmbedder)
    record = fastq.checked_against_reference(folder, h, fast.max_tokens)
    assert record is not None and record["ok"] and record["min_cosine"] >= fastq.MIN_COSINE
    out = tmp_path / "quickstart.urna"
    urna_build = subprocess.run(
        [sys.executable, "-m", "urna", "build", str(QUICKSTART), "-o", str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=600,
    )
    assert urna_build.returncode == 0, urna_build.stderr
    tops: dict[str, list[list[tuple[str, float]]]] = {}
    for label, env in (("reference", "0"), ("fast", "1")):
        monkeypatch.setenv(fastq.FAST_VARIABLE, env)
        kind = fastq.FastQueryEmbedder if env == "1" else Float32Query
        chosen = resolve_query(MINILM, download=False)
        assert isinstance(chosen, CachedQueries) and isinstance(chosen.inner, kind)
        assert chosen.precision == "float32"
        with urna.open(out) as corpus:
            tops[label] = [
                [(h.chunk_id, h.score) for h in corpus.search_text(q, k=10, mode=mode).hits]
                for q in QUERIES
                for mode in ("vector", "hybrid")
            ]
    for fast_top, reference_top in zip(tops["fast"], tops["reference"], strict=True):
        assert [c for c, _ in fast_top] == [c for c, _ in reference_top]
        assert np.allclose([s for _, s in fast_top], [s for _, s in reference_top], atol=1e-6)
    # A cold process takes the fast path: no torch, no transformers.
    code = (
        "import sys, urna\n"
        f"c = urna.open({str(out)!r})\n"
        "r = c.search_text('how do I install urna on Linux?', k=3)\n"
        "print(r.mode, [m for m in ('torch', 'transformers', 'sentence_transformers')"
        " if m in sys.modules])\n"
    )
    env = {**os.environ, fastq.FAST_VARIABLE: "1", "URNA_CACHE_DIR": str(tmp_path / "cold")}
    cold = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout.split() == ["hybrid", "[]"]


def test_a_reference_the_encoder_misses_keeps_the_reference_path(
    own_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = Path(bundled_minilm())
    h = fastq.cached_model_hash(folder)
    embedder = TransformerEmbedder(MINILM, folder)
    exact = NumpyBert(folder, embedder.max_tokens)

    def drifted(texts: list[str]) -> np.ndarray:  # a reference the encoder no longer matches
        v = exact.embed(texts)
        v[:, :8] += 0.05
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    shipped = tmp_path / "references"
    shipped.mkdir()
    monkeypatch.setattr(fastq, "REFERENCES", shipped)
    fastq.write_reference(shipped / (h.removeprefix("sha256:") + ".json"), MINILM, h, drifted)
    record = fastq.checked_against_reference(folder, h, embedder.max_tokens)
    assert record is not None and record["ok"] is False
    assert record["min_cosine"] < fastq.MIN_COSINE
    assert isinstance(embedder.query_embedder(), Float32Query)
    fastq.write_reference(shipped / (h.removeprefix("sha256:") + ".json"), MINILM, h, exact.embed)
    assert isinstance(embedder.query_embedder(), fastq.FastQueryEmbedder)  # a new reference
    (shipped / (h.removeprefix("sha256:") + ".json")).unlink()
    assert isinstance(embedder.query_embedder(), Float32Query)  # none ships: the reference


def test_a_model_without_shipped_references_takes_the_reference(
    own_cache: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(bundled_minilm(), folder)
    with open(folder / "README.md", "a") as handle:
        handle.write("\nanother model\n")
    embedder = TransformerEmbedder("x", folder)
    assert why_unsupported(folder) == "" and fastq.shipped_reference(embedder.model_hash) is None
    query = embedder.query_embedder()
    assert isinstance(query, Float32Query)
    v = query.embed(["a query"])
    assert v.dtype == np.float32 and abs(float(np.linalg.norm(v)) - 1) < 1e-6


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
    assert isinstance(TransformerEmbedder("x", folder).query_embedder(), Float32Query)
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
    assert np.array_equal(alone, got)  # each caller its own text's vector, bit for bit
    assert sum(calls) == len(texts) and len(calls) < len(texts)  # passes were shared

    def failing(texts: list[str]) -> np.ndarray:
        raise ModelError("boom")

    with pytest.raises(ModelError, match="boom"):
        fastq.Coalescer(failing)(["x"])
