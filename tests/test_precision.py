"""The embedder's arithmetic: int8 where the CPU multiplies 8-bit integers natively, else
bfloat16 where it has that natively, else float32, or what is asked; bfloat16 and float32
agree closely enough to rank alike, a file records which it used, and an update keeps it."""

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
    CPU_INT8_VARIABLE,
    PRECISION_VARIABLE,
    cache_key,
    chosen_precision,
    cpu_flags_have_bf16,
    cpu_flags_have_int8,
    cpu_has_bf16,
    int8_installed,
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
    monkeypatch.setenv(CPU_INT8_VARIABLE, "0")  # nor int8
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


def test_native_int8_is_auto_where_the_cpu_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """VNNI (x86) or the dot-product instructions (Arm) make int8 auto's choice, with ONNX
    Runtime installed; an output being updated keeps the precision it records; a named
    precision wins over both."""
    assert cpu_flags_have_int8("flags : fpu avx2 avx512f avx512_vnni", "x86_64")
    assert cpu_flags_have_int8("flags : fpu avx2 avx_vnni", "x86_64")
    assert not cpu_flags_have_int8("flags : fpu avx2 fma avx512f", "x86_64")
    assert cpu_flags_have_int8("Features : fp asimd asimddp", "aarch64")
    assert not cpu_flags_have_int8("Features : fp asimd", "aarch64")
    monkeypatch.delenv(PRECISION_VARIABLE, raising=False)
    monkeypatch.setenv(CPU_BF16_VARIABLE, "1")
    monkeypatch.setenv(CPU_INT8_VARIABLE, "1")
    assert chosen_precision() == ("int8" if int8_installed() else "bfloat16")
    assert chosen_precision(recorded="float32") == "float32"
    assert chosen_precision(recorded="q4") == chosen_precision()  # not ours to keep
    monkeypatch.setenv(CPU_INT8_VARIABLE, "0")
    assert chosen_precision() == "bfloat16"
    monkeypatch.setenv(PRECISION_VARIABLE, "float32")
    assert chosen_precision(recorded="bfloat16") == "float32"


@needs_models
@bf16_computes
def test_bf16_and_float32_rank_the_quickstart_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PRECISION_VARIABLE, raising=False)
    monkeypatch.setenv(CPU_INT8_VARIABLE, "0")  # auto between float32 and bfloat16
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


@needs_models
def test_an_update_keeps_the_precision_its_output_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file and a collection built in float32 and built again under auto keep float32:
    every vector is reused and the new shard is like the old; ``--rebuild`` takes auto's."""
    monkeypatch.setenv(CPU_INT8_VARIABLE, "0")
    monkeypatch.setenv(CPU_BF16_VARIABLE, "1")
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in sorted(QUICKSTART.rglob("*.md"))[:3]:
        (docs / page.name).write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    one, folder = tmp_path / "one.urna", tmp_path / "coll"
    for out, shards in ((one, ()), (folder, ("--shards", "2"))):
        built = run("build", str(docs), "-o", str(out), "--precision", "float32", *shards)
        assert built.exit_code == 0, built.stderr
    (docs / "more.md").write_text("# More\n\nBees keep the hive warm in winter.\n")
    monkeypatch.delenv(PRECISION_VARIABLE, raising=False)
    again = run("build", str(docs), "-o", str(one))
    assert again.exit_code == 0, again.stderr
    with urna.open(one) as corpus:
        assert corpus.manifest["embed_precision"] == "float32"
    assert "embedded:     1\n" in again.stdout  # the new page only
    added = run("build", str(docs), "-o", str(folder))
    assert added.exit_code == 0, added.stderr
    with urna.open(folder) as collection:  # every shard alike, or it would not open
        assert collection.search_text("hive warm", k=1).hits
    written = sorted(folder.glob("*.urna"))
    assert "(updated by what changed)" in added.stdout, added.stdout  # not rebuilt
    for path in written:
        with urna.open(path) as shard:
            assert shard.manifest["embed_precision"] == "float32", path.name
    fresh = run("build", str(docs), "-o", str(one), "--rebuild")
    assert fresh.exit_code == 0, fresh.stderr
    with urna.open(one) as corpus:
        assert corpus.manifest["embed_precision"] == "bfloat16"
