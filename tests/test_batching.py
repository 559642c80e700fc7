"""A text's vector is a function of (model, precision, text): no batchmate, batch size,
thread count or process changes a bit of it (``embed/batching.py``), in float32 and in
bfloat16, for the transformer and for the numpy query encoder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import BF16_PRECISIONS, needs_models
from urna.embed import batching
from urna.embed.hub import MINILM, bundled_minilm
from urna.embed.numpy_bert import NumpyBert
from urna.embed.transformer import TransformerEmbedder

pytestmark = needs_models
WORDS = [
    "the",
    "of",
    "cell",
    "protein",
    "gene",
    "patients",
    "study",
    "results",
    "expression",
    "risk",
    "model",
    "data",
]
PRECISIONS = BF16_PRECISIONS


def texts(n: int = 40, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 300, size=n)
    return [" ".join(rng.choice(WORDS, size=int(m))) + f" ({i})" for i, m in enumerate(lengths)]


@pytest.fixture(scope="module")
def model() -> TransformerEmbedder:
    found = TransformerEmbedder(MINILM, bundled_minilm())
    found.load()
    return found


def test_padded_lengths_depend_on_the_text_alone() -> None:
    assert [batching.padded_length(n, 256) for n in (1, 2, 16, 17, 255, 256, 999)] == [
        16, 16, 16, 32, 256, 256, 256,
    ]  # fmt: skip
    groups = list(batching.batches([3, 40, 17, 5, 33, 300, 4, 2], 256, size=2))
    assert groups == [(16, [0, 3]), (16, [6, 7]), (32, [2]), (48, [1, 4]), (256, [5])]


@pytest.mark.parametrize("precision", PRECISIONS)
def test_batchmates_change_no_bit(model: TransformerEmbedder, precision: str) -> None:
    sample = texts()
    alone = np.stack([model.embed_in([t], precision)[0] for t in sample[:12]])
    together = model.embed_in(sample, precision)
    assert np.array_equal(alone, together[:12])
    shuffled = [sample[i] for i in np.random.default_rng(1).permutation(len(sample))]
    again = model.embed_in(shuffled + texts(10, seed=2), precision)
    where = {t: i for i, t in enumerate(shuffled)}
    assert np.array_equal(np.stack([again[where[t]] for t in sample]), together)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_how_many_texts_share_a_pass_changes_no_bit(
    model: TransformerEmbedder, precision: str
) -> None:
    """Short texts (one padded length) embedded 1, 2, ..., ROWS + 3 at a time: a pass's
    row count and a text's row in it never show in its vector."""
    rng = np.random.default_rng(6)
    short = [" ".join(rng.choice(WORDS, size=5)) + f" {i}" for i in range(batching.ROWS + 3)]
    assert len({batching.padded_length(n, 256) for n in model.count_tokens(short)}) == 1
    every = model.embed_in(short, precision)
    for count in range(1, len(short)):
        part = model.embed_in(short[-count:], precision)
        assert np.array_equal(part, every[-count:]), count


@pytest.mark.parametrize("precision", PRECISIONS)
def test_thread_count_changes_no_bit(model: TransformerEmbedder, precision: str) -> None:
    import torch

    sample = texts(24, seed=3)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = model.embed_in(sample, precision)
        torch.set_num_threads(2)
        two = model.embed_in(sample, precision)
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(one, two)


def test_another_process_embeds_the_same_bits(model: TransformerEmbedder, tmp_path: Path) -> None:
    sample = texts(16, seed=4)
    (tmp_path / "texts.json").write_text(json.dumps(sample))
    code = (
        "import json, sys, numpy as np\n"
        "from urna.embed.hub import MINILM, bundled_minilm\n"
        "from urna.embed.transformer import TransformerEmbedder\n"
        "m = TransformerEmbedder(MINILM, bundled_minilm())\n"
        "t = json.load(open(sys.argv[1]))\n"
        "np.save(sys.argv[2], m.embed_in(t, sys.argv[3]))\n"
    )
    for precision in PRECISIONS:
        out = tmp_path / f"{precision}.npy"
        env = {**os.environ, "URNA_TORCH_THREADS": "1"}
        done = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "texts.json"), str(out), precision],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert np.array_equal(np.load(out), model.embed_in(sample, precision)), precision


def test_the_numpy_encoder_is_batch_invariant_too() -> None:
    encoder = NumpyBert(Path(bundled_minilm()), 254)
    sample = texts(20, seed=5)
    alone = np.stack([encoder.embed([t])[0] for t in sample])
    assert np.array_equal(encoder.embed(sample), alone)
    assert np.array_equal(encoder.embed(list(reversed(sample)))[::-1], alone)
    assert np.array_equal(encoder.embed(sample[3:9]), alone[3:9])
