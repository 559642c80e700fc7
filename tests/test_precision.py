"""The embedder's arithmetic: bfloat16 where the CPU has it natively, float32 elsewhere or on
request; the two agree closely enough to rank alike, and a file records which it used."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import bf16_computes, needs_models, run
from urna.embed.hub import MINILM, bundled_minilm
from urna.embed.precision import (
    CPU_BF16_VARIABLE,
    PRECISION_VARIABLE,
    cache_key,
    chosen_precision,
    cpu_flags_have_bf16,
    cpu_has_bf16,
)
from urna.embed.transformer import TransformerEmbedder
from urna.errors import ModelError

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart" / "docs"
QUERIES = [
    "how do I install urna on Linux?",
    "what does the model hash protect against?",
    "how is a citation checked against its source?",
    "which formats can be indexed?",
]


def test_native_bf16_is_read_from_the_cpu_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cpu_flags_have_bf16("flags : fpu avx512f avx512_bf16 avx512_vnni", "x86_64")
    assert cpu_flags_have_bf16("flags : fpu amx_bf16 amx_tile", "x86_64")
    assert not cpu_flags_have_bf16("flags : fpu avx2 avx512f avx512_vnni", "x86_64")
    assert cpu_flags_have_bf16("Features : fp asimd bf16 i8mm", "aarch64")
    assert not cpu_flags_have_bf16("Features : fp asimd", "aarch64")
    monkeypatch.setenv(CPU_BF16_VARIABLE, "0")  # a CPU without native bf16, forced
    monkeypatch.delenv(PRECISION_VARIABLE, raising=False)
    assert not cpu_has_bf16() and chosen_precision() == "float32"
    monkeypatch.setenv(CPU_BF16_VARIABLE, "1")
    assert chosen_precision() == "bfloat16"
    monkeypatch.setenv(PRECISION_VARIABLE, "float32")  # on request
    assert chosen_precision() == "float32"
    monkeypatch.setenv(PRECISION_VARIABLE, "half")
    with pytest.raises(ModelError, match="URNA_EMBED_PRECISION='half'"):
        chosen_precision()
    assert cache_key("sha256:ab", "float32") == "sha256:ab"
    assert cache_key("sha256:ab", "bfloat16") == "sha256:ab+bfloat16"


@needs_models
@bf16_computes
def test_bf16_and_float32_rank_the_quickstart_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PRECISION_VARIABLE, raising=False)
    monkeypatch.setenv(CPU_BF16_VARIABLE, "0")
    plain = TransformerEmbedder(MINILM, bundled_minilm())
    assert plain.precision == "float32"  # no native bf16: the float32 path
    monkeypatch.setenv(CPU_BF16_VARIABLE, "1")
    fast = TransformerEmbedder(MINILM, bundled_minilm())
    assert fast.precision == "bfloat16"
    chunks = [p.read_text(encoding="utf-8") for p in sorted(QUICKSTART.rglob("*.md"))] + QUERIES
    a, b = plain.embed(chunks), fast.embed(chunks)
    cosines = np.sum(a * b, axis=1)
    assert cosines.min() >= 0.9995 and cosines.mean() >= 0.9999
    for precision, env in (("float32", "0"), ("bfloat16", "1")):
        monkeypatch.setenv(CPU_BF16_VARIABLE, env)
        out = tmp_path / f"{precision}.urna"

        result = run("build", str(QUICKSTART), "-o", str(out), "--model", "minilm")
        assert result.exit_code == 0, result.stderr
        with urna.open(out) as corpus:
            assert corpus.manifest["embed_precision"] == precision
    # The same top-10 for every quickstart query, whichever arithmetic built and asks.
    tops = {}
    for precision in ("float32", "bfloat16"):
        with urna.open(tmp_path / f"{precision}.urna") as corpus:
            embedder = plain if precision == "float32" else fast
            tops[precision] = [
                [h.chunk_id for h in corpus.search(embedder.embed([q])[0], k=10).hits]
                for q in QUERIES
            ]
    assert tops["float32"] == tops["bfloat16"]
    shown = json.loads(run("inspect", str(tmp_path / "bfloat16.urna"), "--json").stdout)
    assert shown["manifest"]["embed_precision"] == "bfloat16"


def test_int8_vectors_are_cached_under_their_export_recipe() -> None:
    """A new int8 recipe gives other vectors: the cache never serves an older recipe's
    (keys before recipe 3 were ``hash+int8+batching``), and other precisions keep theirs."""
    from urna.embed.precision import INT8_RECIPE, cache_key

    assert cache_key("h", "int8", "b") == f"h+int8:{INT8_RECIPE}+b" != "h+int8+b"
    assert cache_key("h", "int8@cuda", "b") == f"h+int8:{INT8_RECIPE}@cuda+b"
    assert cache_key("h", "bfloat16", "b") == "h+bfloat16+b"
    assert cache_key("h", "float32") == "h"
