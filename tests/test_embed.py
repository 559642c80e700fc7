"""Embedders: model_hash identity, the registry's names, and the hub path without a network."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import needs_models
from urna.embed.model_hash import model_hash


def test_model_hash_is_location_independent(tmp_path: Path) -> None:
    a = tmp_path / "a" / "model"
    a.mkdir(parents=True)
    (a / "config.json").write_text("{}")
    (a / "sub").mkdir()
    (a / "sub" / "weights.bin").write_bytes(b"\x00\x01" * 100)
    (a / ".cache").mkdir()
    (a / ".cache" / "junk").write_text("machine-specific")
    b = tmp_path / "elsewhere" / "copy"
    shutil.copytree(a, b)
    (b / ".cache" / "junk").write_text("other machine")
    assert model_hash(a) == model_hash(b)
    (b / "sub" / "weights.bin").write_bytes(b"\x00\x02" * 100)
    assert model_hash(a) != model_hash(b)
    with pytest.raises(urna.FileError):
        model_hash(tmp_path / "nope")


def test_unknown_model_name() -> None:
    from urna.embed.registry import resolve

    with pytest.raises(urna.ModelError, match="unknown model"):
        resolve("no-such-model")


def test_hub_model_without_network_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("huggingface_hub")
    from urna.embed.registry import resolve

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent-urna-test-hf-home")
    embedder = resolve("minishlab/potion-base-8M")
    with pytest.raises(urna.ModelError, match="neither a local folder nor reachable"):
        _ = embedder.model_hash


@needs_models
def test_minilm_embeds_unit_vectors_and_counts_tokens() -> None:
    from urna.embed.registry import resolve

    e = resolve("minilm")
    assert (e.name, e.dim, e.max_tokens) == ("sentence-transformers/all-MiniLM-L6-v2", 384, 254)
    v = e.embed(["a cat sat on the mat", "a kitten rested on the rug", "tax law of 1986"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]
    assert e.count_tokens(["hello world", ""]) == [2, 0]
    assert e.model_hash == model_hash(Path(e._folder))  # type: ignore[attr-defined]


@needs_models
def test_token_counts_do_not_depend_on_what_ran_before() -> None:
    """The static model's encode turns truncation on in its tokenizer; chunking counts with
    its own copy, so a count is the same before and after an embed (it was cut at 512)."""
    from urna.embed.registry import resolve

    static = resolve("minilm-static")
    long_text = "word " * 700
    before = static.count_tokens([long_text, "short"])
    static.embed(["x " * 600])
    assert static.count_tokens([long_text, "short"]) == before
    assert before[0] >= 700


@needs_models
def test_a_static_model_loads_without_transformers() -> None:
    """A static model is a table and a tokenizer: loading and using it leaves transformers
    unimported (importing it only to quiet its logging cost a cold query 2.4 s)."""
    import subprocess
    import sys

    from urna.embed.static import distilled_minilm

    distilled_minilm()  # distilling (once, into the session's cache) does use transformers
    code = (
        "import sys\n"
        "from urna.embed.registry import resolve\n"
        "e = resolve('minilm-static')\n"
        "assert e.embed(['a cat sat on the mat']).shape == (1, e.dim)\n"
        "print('transformers' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert done.stdout.strip() == "False"
    assert done.stderr == ""
