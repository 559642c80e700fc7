"""The embedder interface, and where urna keeps what it caches."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

THREADS_VARIABLE = "URNA_TORCH_THREADS"  # the thread count a model runs on, when set
COUNT_BATCH = 4096  # texts a tokenizer counts at a time (its encodings are then dropped)


class Embedder(Protocol):
    """What the build and the text-query verbs need from a model."""

    @property
    def name(self) -> str:
        """The name recorded in the manifest as embedding_model."""

    @property
    def dim(self) -> int: ...

    @property
    def model_hash(self) -> str: ...

    @property
    def precision(self) -> str:
        """The arithmetic its vectors come from: float32 or bfloat16."""

    @property
    def batching(self) -> str:
        """How texts are padded into batches (``embed/batching.py``), "" where a vector
        never sees another text (static models)."""

    @property
    def max_tokens(self) -> int:
        """Content tokens the model reads per text (its window minus special tokens)."""

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text by the model's own tokenizer, special tokens excluded."""

    def load(self) -> None:
        """Load the weights now (otherwise the first embed does)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit vectors."""


def count_with(tokenizer: Any, texts: Sequence[str]) -> list[int]:
    """Tokens of each text by a ``tokenizers.Tokenizer`` (no special tokens), a batch at a
    time: a whole corpus's encodings at once hold ids, offsets and strings of every token
    (about 15 GB for a million records)."""
    counts: list[int] = []
    for start in range(0, len(texts), COUNT_BATCH):
        batch = list(texts[start : start + COUNT_BATCH])
        counts.extend(len(e.ids) for e in tokenizer.encode_batch(batch, add_special_tokens=False))
    return counts


def cache_dir() -> Path:
    """``$URNA_CACHE_DIR``, else ``$XDG_CACHE_HOME/urna``, else ``~/.cache/urna``."""
    if os.environ.get("URNA_CACHE_DIR"):
        return Path(os.environ["URNA_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "urna"


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1
    return (m / norms).astype(np.float32)


def quiet_hub_logging(*, transformers: bool = True) -> None:
    """Keep model loading off stderr: no weight-loading bars or load reports.
    ``transformers=False`` for a loader that never imports transformers (a static
    model): importing it only to quiet it cost 2.4 s of a cold query."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not transformers:
        return
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:
        pass
