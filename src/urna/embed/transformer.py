"""Transformer embedders through sentence-transformers (all-MiniLM-L6-v2 by default, offline)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from urna.embed.base import THREADS_VARIABLE, quiet_hub_logging, unit_rows
from urna.embed.hub import hub_snapshot
from urna.embed.precision import chosen_precision
from urna.embed.query import (
    FastQueryEmbedder,
    cached_model_hash,
    fast_path_for,
    probe_record,
    run_probe,
)
from urna.errors import ModelError, missing_extra

BATCH = 32


class TransformerEmbedder:
    """A sentence-transformers model from a local folder (or a hub name, with a network)."""

    def __init__(self, name: str, source: str | Path, *, download: bool = True) -> None:
        self._name = name
        self._source = source
        self._download = download

    @property
    def name(self) -> str:
        return self._name

    @cached_property
    def _folder(self) -> Path | None:
        path = Path(self._source)
        if path.is_dir():
            return path
        return hub_snapshot(str(self._source), download=self._download)

    @cached_property
    def dim(self) -> int:
        if self._folder is not None:
            pooling = self._folder / "1_Pooling" / "config.json"
            if pooling.exists():
                return int(json.loads(pooling.read_text())["word_embedding_dimension"])
        return int(self._model.get_sentence_embedding_dimension())

    @cached_property
    def model_hash(self) -> str:
        if self._folder is None:
            raise ModelError(f"model {self._source} is not a local folder, so it cannot be hashed")
        return cached_model_hash(self._folder)

    @cached_property
    def max_tokens(self) -> int:
        window = 256
        if self._folder is not None:
            config = self._folder / "sentence_bert_config.json"
            if config.exists():
                window = int(json.loads(config.read_text()).get("max_seq_length", window))
        return window - 2  # [CLS] and [SEP]

    @cached_property
    def _tokenizer(self) -> Any:
        if self._folder is not None and (self._folder / "tokenizer.json").exists():
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self._folder / "tokenizer.json"))
            tok.no_padding()  # the file may pad or truncate to the model's window: count it all
            tok.no_truncation()
            return tok
        return None

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if self._tokenizer is not None:
            encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
            return [len(e.ids) for e in encoded]
        tok = self._model.tokenizer
        return [len(ids) for ids in tok(list(texts), add_special_tokens=False)["input_ids"]]

    @cached_property
    def _model(self) -> Any:
        quiet_hub_logging()
        if self._folder is not None and Path(str(self._source)).is_dir():
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder needs no network
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise missing_extra("sentence-transformers") from None
        threads = os.environ.get(THREADS_VARIABLE, "")  # set by collection builds
        torch.set_num_threads(int(threads) if threads.isdigit() else max(1, os.cpu_count() or 1))
        try:
            model = SentenceTransformer(str(self._folder or self._source), device="cpu")
        except Exception as exc:  # a broken folder or an unreachable hub name
            raise ModelError(f"cannot load model {self._source}: {exc}") from None
        self._probe_fast_path(model)
        return model

    def _probe_fast_path(self, model: Any) -> None:
        """With the reference loaded anyway: check the numpy query encoder against it once
        per model and cache (``embed/query.py``)."""
        if fast_path_for(self._folder) or self._folder is None:
            return
        if probe_record(self.model_hash) is None:

            def reference(texts: list[str]) -> np.ndarray:
                return np.asarray(
                    model.encode(texts, batch_size=BATCH, normalize_embeddings=True),
                    dtype=np.float32,
                )

            run_probe(self._folder, self.model_hash, reference, self.max_tokens)

    def query_embedder(self) -> TransformerEmbedder | FastQueryEmbedder:
        """What embeds one query: the numpy encoder once a probe passed for these model
        files, else this embedder (whose loading runs the probe)."""
        folder = self._folder if Path(str(self._source)).is_dir() else None
        if fast_path_for(folder) or folder is None:
            return self
        record = probe_record(self.model_hash)
        if record is None or record.get("ok") is not True:
            return self
        return FastQueryEmbedder(self.name, folder, self.model_hash, self.dim, self.max_tokens)

    def load(self) -> None:
        """Load the weights now (otherwise the first embed does)."""
        _ = self._model

    @cached_property
    def precision(self) -> str:
        return chosen_precision()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        model = self._model
        with _autocast(self.precision):
            vectors = model.encode(
                list(texts),
                batch_size=BATCH,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return unit_rows(np.asarray(vectors, dtype=np.float32))


def _autocast(precision: str) -> Any:
    """bfloat16 autocast on the CPU, or nothing (float32)."""
    import contextlib

    import torch

    if precision == "bfloat16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()
