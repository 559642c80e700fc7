"""A BERT sentence encoder in numpy, for embedding one query in a cold process.

A query is a few dozen tokens: the forward pass of all-MiniLM-L6-v2 over it is a few small
matrix products, ~5 ms in numpy. What a cold ``urna ask`` waited for was importing torch,
transformers and sentence-transformers (seconds). This module reads the same
``model.safetensors`` through a memory map and the same ``tokenizer.json`` through
``tokenizers``, and computes what sentence-transformers computes for a BERT model with mean
pooling and normalization. It is used only for a model whose shipped reference vectors it
reproduces (see ``embed/query.py``). Each text has a pass of its own, padded as the
transformer pads it (``embed/batching.py``), so a query's vector does not depend on the
queries embedded with it.
"""

from __future__ import annotations

import json
import mmap
import struct
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from urna.embed.batching import padded_length
from urna.errors import ModelError

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}
_MAX_HEADER = 16 << 20


def why_unsupported(folder: Path) -> str:
    """Empty when ``folder`` holds a model this encoder computes as sentence-transformers
    does (urna normalizes every vector, so a Normalize module is optional), else why not."""
    try:
        config = json.loads((folder / "config.json").read_text())
        modules = json.loads((folder / "modules.json").read_text())
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
        kinds = [str(m.get("type", "")).rpartition(".")[2] for m in modules]
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        return f"cannot read its configuration: {exc}"
    if not isinstance(config, dict) or not isinstance(pooling, dict):
        return "cannot read its configuration: not JSON objects"
    checks = {
        "a BERT model": config.get("model_type") == "bert",
        "GELU": config.get("hidden_act") == "gelu",
        "absolute positions": config.get("position_embedding_type", "absolute") == "absolute",
        "Transformer, Pooling[, Normalize]": kinds
        in (["Transformer", "Pooling", "Normalize"], ["Transformer", "Pooling"]),
        "mean pooling": pooling.get("pooling_mode_mean_tokens") is True
        and not any(
            v
            for k, v in pooling.items()
            if k.startswith("pooling_mode_") and "mean_tokens" not in k
        ),
        "model.safetensors": (folder / "model.safetensors").is_file(),
        "tokenizer.json": (folder / "tokenizer.json").is_file(),
    }
    missing = [what for what, ok in checks.items() if not ok]
    return f"not {', '.join(missing)}" if missing else ""


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file as a read-only array over a memory map (float
    tensors only; bfloat16 and float16 widened to float32 on read)."""
    try:
        with open(path, "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # unreadable, or empty (nothing to map)
        raise ModelError(f"{path} is not a readable safetensors file: {exc}") from None
    if len(mapped) < 8:
        raise ModelError(f"{path} is not a safetensors file")
    (size,) = struct.unpack("<Q", mapped[:8])
    if size > min(_MAX_HEADER, len(mapped) - 8):
        raise ModelError(f"{path} is not a safetensors file (header of {size} bytes)")
    try:
        header = json.loads(mapped[8 : 8 + size])
    except ValueError as exc:
        raise ModelError(f"{path}: unreadable safetensors header: {exc}") from None
    base = 8 + size
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__" or info.get("dtype") not in _DTYPES:
            continue
        start, end = (int(x) for x in info["data_offsets"])
        dtype = np.dtype(_DTYPES[info["dtype"]])
        shape = tuple(int(n) for n in info["shape"])
        count = int(np.prod(shape)) if shape else 1
        if not 0 <= start <= end <= len(mapped) - base or end - start != count * dtype.itemsize:
            raise ModelError(f"{path}: tensor {name} lies outside the file")
        array = np.frombuffer(mapped, dtype=dtype, count=count, offset=base + start).reshape(shape)
        if info["dtype"] == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        elif info["dtype"] == "F16":
            array = array.astype(np.float32)
        out[name] = array
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26), in float64 then back."""
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    y = 1.0 - poly * np.exp(-z * z)
    return (np.sign(x) * y).astype(np.float32)


def _gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return (centred / np.sqrt(var + np.float32(eps)) * weight + bias).astype(np.float32)


class NumpyBert:
    """The encoder of one model folder: ``embed(texts)`` gives unit float32 vectors."""

    def __init__(self, folder: Path, max_tokens: int) -> None:
        self.folder = folder
        self.window = max_tokens + 2  # [CLS] and [SEP]

    @cached_property
    def config(self) -> dict[str, Any]:
        return dict(json.loads((self.folder / "config.json").read_text()))

    @cached_property
    def weights(self) -> dict[str, np.ndarray]:
        tensors = read_safetensors(self.folder / "model.safetensors")
        if not any(k.startswith("embeddings.") for k in tensors):  # a BertForX checkpoint
            tensors = {k.removeprefix("bert."): v for k, v in tensors.items()}
        return tensors

    @cached_property
    def tokenizer(self) -> Any:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ModelError("the fast query path needs the tokenizers package") from None
        tok = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(max_length=self.window)
        return tok

    def _w(self, name: str) -> np.ndarray:
        try:
            return self.weights[name]
        except KeyError:
            raise ModelError(f"{self.folder}: the weights have no tensor {name}") from None

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return np.asarray(x @ self._w(name + ".weight").T + self._w(name + ".bias"), np.float32)

    def encode(self, batch: Sequence[Sequence[int]], length: int | None = None) -> np.ndarray:
        """The mean-pooled last hidden states of token sequences, padded to ``length`` (by
        default the longest) and masked, in one pass (not normalized): (len(batch), hidden)."""
        c = self.config
        eps = float(c.get("layer_norm_eps", 1e-12))
        heads = int(c["num_attention_heads"])
        b, n = len(batch), max(length or 0, *(len(ids) for ids in batch))
        tokens = np.zeros((b, n), dtype=np.int64)
        valid = np.zeros((b, n), dtype=bool)
        for row, ids in enumerate(batch):
            tokens[row, : len(ids)] = ids
            valid[row, : len(ids)] = True
        w = self._w
        x = (
            w("embeddings.word_embeddings.weight")[tokens]
            + w("embeddings.position_embeddings.weight")[:n]
            + w("embeddings.token_type_embeddings.weight")[0]
        ).reshape(b * n, -1)
        x = _layer_norm(x, w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"), eps)
        width = x.shape[1] // heads
        scale = np.float32(1.0 / np.sqrt(width))
        masked = np.where(valid, np.float32(0), np.float32(-1e9))[:, None, None, :]
        for i in range(int(c["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            q, k, v = (
                self._linear(x, p + f"attention.self.{m}")
                .reshape(b, n, heads, width)
                .transpose(0, 2, 1, 3)
                for m in ("query", "key", "value")
            )
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + masked
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(b * n, heads * width)
            attended = self._linear(context, p + "attention.output.dense")
            x = _layer_norm(
                x + attended,
                w(p + "attention.output.LayerNorm.weight"),
                w(p + "attention.output.LayerNorm.bias"),
                eps,
            )
            inner = _gelu(self._linear(x, p + "intermediate.dense"))
            out = self._linear(inner, p + "output.dense")
            x = _layer_norm(
                x + out, w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias"), eps
            )
        hidden = x.reshape(b, n, -1) * valid[:, :, None]
        return np.asarray(hidden.sum(axis=1) / valid.sum(axis=1)[:, None], dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one text per pass, padded as the transformer pads it: a BLAS picks
        its kernels from a product's shape, so a pass over several texts could give a text
        other bits than a pass over it alone (measured with OpenBLAS on an AVX2 EPYC)."""
        if not texts:
            return np.empty((0, int(self.config["hidden_size"])), dtype=np.float32)
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        matrix = np.empty((len(ids), int(self.config["hidden_size"])), dtype=np.float32)
        for row, one in enumerate(ids):
            matrix[row] = self.encode([one], padded_length(len(one), self.window))[0]
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1
        return (matrix / norms).astype(np.float32)
