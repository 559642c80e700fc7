"""Transformer embedders through sentence-transformers (all-MiniLM-L6-v2 by default, offline)."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from urna.embed.base import THREADS_VARIABLE, Embedder, count_with, quiet_hub_logging, unit_rows
from urna.embed.batching import ONE_ROW, ROWS, batches, filled
from urna.embed.batching import RECIPE as BATCHING
from urna.embed.device import asked_device, gpu_may_be_present, resolved_device
from urna.embed.e5 import prompts_for
from urna.embed.hub import hub_snapshot
from urna.embed.numpy_bert import why_unsupported
from urna.embed.precision import asked_precision, chosen_precision, without_int8
from urna.embed.query import (
    FastQueryEmbedder,
    cached_model_hash,
    checked_against_reference,
    fast_path_for,
)
from urna.errors import ModelError, missing_extra

log = logging.getLogger(__name__)
_PASSES = threading.Lock()  # embed_in calls, one at a time (they set torch's thread count)


class TransformerEmbedder:
    """A sentence-transformers model from a local folder (or a hub name, with a network)."""

    def __init__(
        self, name: str, source: str | Path, *, download: bool = True, precision: str | None = None
    ) -> None:
        self._name = name
        self._source = source
        self._download = download
        self._asked = precision  # named by the caller (a collection's workers), else chosen
        # (query, passage) prefixes for a model trained with prompts (E5: ``embed/e5.py``)
        self.prompts = prompts_for(name) or prompts_for(str(source))

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
            return count_with(self._tokenizer, texts)
        tok = self._model.tokenizer
        return [len(ids) for ids in tok(list(texts), add_special_tokens=False)["input_ids"]]

    @cached_property
    def device(self) -> str:
        """The torch device it runs on (``embed/device.py``): cpu, cuda or mps. int8 runs on
        the CPU (ONNX Runtime), so a GPU asked for with it is an error."""
        asked = asked_device()
        if self.precision == "int8" and asked in ("cuda", "mps"):
            raise ModelError(
                f"int8 embedding runs on the CPU (ONNX Runtime), not {asked}: "
                "use --device cpu (or auto), or another --precision"
            )
        if asked == "cpu" or self.precision == "int8":
            return "cpu"
        try:
            import torch
        except ImportError:
            raise missing_extra("sentence-transformers") from None
        return resolved_device(asked, torch)

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
            model = SentenceTransformer(str(self._folder or self._source), device=self.device)
        except Exception as exc:  # a broken folder or an unreachable hub name
            raise ModelError(f"cannot load model {self._source}: {exc}") from None
        return model

    def query_embedder(self) -> Embedder:
        """What embeds a query: the numpy encoder where it matches this model's shipped
        reference vectors (``embed/query.py``), else this model in float32. The choice
        depends on the model files alone, never on what ran before in this process."""
        folder = self._folder if Path(str(self._source)).is_dir() else None
        if self.prompts is not None:  # the numpy encoder knows no prompts
            return Float32Query(self, self.prompts[0])
        if not fast_path_for(folder) and folder is not None:
            record = checked_against_reference(folder, self.model_hash, self.max_tokens)
            if record is not None and record.get("ok") is True:
                return FastQueryEmbedder(
                    self.name, folder, self.model_hash, self.dim, self.max_tokens
                )
        return Float32Query(self)

    def load(self) -> None:
        """Load the weights now (otherwise the first embed does)."""
        _ = self._int8.session if self.precision == "int8" else self._model

    @cached_property
    def precision(self) -> str:
        """The arithmetic its chunks are embedded in (``embed/precision.py``). ``auto``'s int8
        gives way to the next choice, with one warning, for a model int8 cannot run, and
        silently where a GPU will embed (int8 runs on the CPU only)."""
        chosen = self._asked or chosen_precision()
        if chosen != "int8" or self._asked is not None or asked_precision() != "auto":
            return chosen
        if self._on_a_gpu():
            return without_int8()
        why = "not a local model folder" if self._folder is None else why_unsupported(self._folder)
        if why:
            log.warning("warning: embedding in %s, not int8: %s", without_int8(), why)
            return without_int8()
        return chosen

    def _on_a_gpu(self) -> bool:
        asked = asked_device()
        if asked in ("cuda", "mps"):
            return True
        if asked == "cpu" or not gpu_may_be_present():
            return False
        try:
            import torch
        except ImportError:
            return False
        return resolved_device("auto", torch) != "cpu"

    @property
    def batching(self) -> str:
        return ONE_ROW if self.precision == "int8" else BATCHING

    @cached_property
    def _int8(self) -> Any:
        from urna.embed.int8 import Int8Encoder

        if self._folder is None or not (self._folder / "tokenizer.json").is_file():
            raise ModelError(
                f"int8 embedding needs a local model folder with tokenizer.json: {self._source}"
            )
        return Int8Encoder(
            self._folder,
            self.model_hash,
            self.max_tokens + 2,
            torch_model=self._export_model,
            reference=lambda texts: self.embed_in(texts, "float32"),
        )

    def _export_model(self) -> Any:
        """A fresh copy of the weights for the int8 export, with plain ("eager") attention:
        its additive mask exports as one addition where the default attention exports
        masking and NaN guards per layer (25% of an int8 pass measured). The loaded model
        is not touched, so its own vectors cannot change."""
        quiet_hub_logging()
        try:
            from transformers import AutoModel
        except ImportError:
            raise missing_extra("transformers") from None
        model = AutoModel.from_pretrained(str(self._folder), attn_implementation="eager")
        return model.eval()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_in(texts, self.precision, self.prompts[1] if self.prompts else "")

    def embed_in(self, texts: Sequence[str], precision: str, prefix: str = "") -> np.ndarray:
        """Unit vectors in ``precision``, each text padded to a length of its own and every
        pass of one shape for that length (``embed/batching.py``): no batchmate changes a bit
        of another's vector. ``prefix``: the model's prompt for this kind of text."""
        if prefix:
            texts = [prefix + t for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        if precision == "int8":
            return np.asarray(self._int8.embed(texts), dtype=np.float32)
        model = self._model  # first: a missing extra is reported by the loader
        import torch

        tok = model.tokenizer
        window = int(getattr(model, "max_seq_length", None) or self.max_tokens + 2)
        encoded = tok(list(texts), truncation=True, max_length=window, padding=False)
        keys = [k for k in ("input_ids", "token_type_ids", "attention_mask") if k in encoded]
        pads = {"input_ids": tok.pad_token_id or 0, "token_type_ids": 0, "attention_mask": 0}
        left = getattr(tok, "padding_side", "right") == "left"
        ids = encoded["input_ids"]

        def one_pass(length: int, rows: list[int]) -> None:
            features = {}
            for key in keys:
                block = np.full((ROWS, length), pads[key], dtype=np.int64)
                for j, r in enumerate(filled(rows, ROWS)):
                    values = encoded[key][r]
                    if left:
                        block[j, length - len(values) :] = values
                    else:
                        block[j, : len(values)] = values
                features[key] = torch.from_numpy(block).to(self.device)
            with torch.inference_mode(), _autocast(precision, self.device):
                vectors = model(features)["sentence_embedding"]
            out[rows] = vectors.float().cpu().numpy()[: len(rows)]

        # Each pass on one thread, passes side by side on the threads torch was given: a
        # matrix library splits one product over threads by their count (oneDNN on an
        # AVX-512 Xeon gave other bits at 1 and 2 threads), one pass per thread never does.
        # The thread count is torch's, process-wide: one call at a time sets and restores it.
        work = list(batches([len(row) for row in ids], window, ROWS))
        with _PASSES:
            workers = torch.get_num_threads() if self.device == "cpu" else 1
            torch.set_num_threads(1)
            try:
                if workers > 1 and len(work) > 1:
                    with ThreadPoolExecutor(min(workers, len(work)), "urna-embed") as pool:
                        list(pool.map(lambda job: one_pass(*job), work))
                else:
                    for length, rows in work:
                        one_pass(length, rows)
            finally:
                torch.set_num_threads(workers)
        return unit_rows(out)


class Float32Query:
    """A transformer model embedding queries in float32, whatever its build precision."""

    precision = "float32"
    batching = BATCHING

    def __init__(self, model: TransformerEmbedder, prefix: str = "") -> None:
        self._model = model
        self._prefix = prefix  # the model's query prompt, if it was trained with one

    @property
    def name(self) -> str:
        return self._model.name

    @property
    def dim(self) -> int:
        return self._model.dim

    @property
    def model_hash(self) -> str:
        return self._model.model_hash

    @property
    def max_tokens(self) -> int:
        return self._model.max_tokens

    @property
    def device(self) -> str:
        return self._model.device

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._model.count_tokens(texts)

    def load(self) -> None:
        _ = self._model._model  # the float32 torch model, whatever the build precision

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.embed_in(texts, "float32", self._prefix)


def _autocast(precision: str, device: str = "cpu") -> Any:
    """bfloat16 autocast on the device, or nothing (float32)."""
    import contextlib

    import torch

    if precision == "bfloat16":
        return torch.autocast(device, dtype=torch.bfloat16)
    return contextlib.nullcontext()
