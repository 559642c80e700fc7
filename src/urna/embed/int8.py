"""int8 embedding: the model's own weights, quantized once, run on the CPU's integer units.

``--precision int8`` (``URNA_EMBED_PRECISION=int8``) embeds with ONNX Runtime: the
transformer is exported once to ONNX by ``torch.onnx.export`` from the weights it already
has, its matrix products with constant weights are quantized by
``onnxruntime.quantization.quantize_dynamic`` (8-bit weights, one scale per output channel;
activations quantized per product at run time), and the result is kept in the cache folder
(``int8/<model hash>/``) with a record of the check below. Later builds load it in well
under a second, without torch.

What is written here, and why by hand: only the glue. Export and quantization are the two
libraries' own; what they leave to the caller is where the file lives, whether it can be
trusted (the record holds its SHA-256 and the cosine it reached against the model's float32
vectors on fixed probe sentences, ``embed/query.py``'s; an export below ``MIN_COSINE`` is
refused) and how texts go through it.

How texts go through it: dynamic quantization scales each activation matrix by its own
largest value, so in a pass over several texts one text's bits would depend on the others.
Each text therefore has a pass of its own, padded to its own length rounded up to
``embed/batching.py``'s bucket (recipe ``rows=1``), each pass on one ONNX Runtime thread,
passes side by side on the threads urna embeds with. A vector is then a function of (model,
precision, text): the cache may serve it and any batching gives it. Mean
pooling over the text's own tokens and normalization are done here in numpy, as
sentence-transformers' Pooling and Normalize modules do them (the models this runs are
those ``numpy_bert.why_unsupported`` accepts: BERT with mean pooling).

The weights are signed and 7-bit (``QInt8`` with ``reduce_range``, recipe
``urna-onnx-int8/4``). Signed weights against unsigned activations are VNNI's native product
(``vpdpbusd``, 32-bit sums); a CPU without VNNI multiplies them with ``vpmaddubsw``, whose
16-bit pair sums saturate when two 255 x 127 products meet: with 8-bit signed weights
(recipe 2) an AVX2-only EPYC's probe sentences fell to a cosine of 0.9712 and every int8
build was refused. Unsigned weights (recipe 3) go through kernels that widen first, so
nothing saturates, but they lost VNNI's product: on a VNNI EPYC 400 scifact records took
11.9 s against 6.8-8.3 s for signed weights. 7-bit weights keep every pair sum below 2^15
(2 x 255 x 63), so the same integer products are exact on both kinds of CPU and take the
fast kernel on each: 8.2-8.3 s there, and 10.4 s against 11.6-11.8 s for unsigned weights
on the AVX2 EPYC. The cost is a little precision: cosine to float32 0.9936 mean (0.9898
min) on those records against 0.9949 (0.9917) for 8-bit weights. Retrieval keeps its
quality all the same (nDCG@10 within 0.002 of float32 on every quality set), so ``auto``
picks int8 on a CPU with VNNI (``embed/precision.py``; figures: docs/performance.md,
"Embedding precision").
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from urna.embed.base import THREADS_VARIABLE, cache_dir
from urna.embed.batching import padded_length
from urna.embed.numpy_bert import why_unsupported
from urna.embed.precision import INT8_RECIPE
from urna.embed.query import PROBES, compare, shipped_reference
from urna.errors import ModelError, missing_extra
from urna.native import onnxruntime_may_load

EXPORT = f"{INT8_RECIPE} opset=17 eager-attention per-channel s7-weights constant-weights"
MIN_COSINE = 0.98  # an export whose probe vectors fall below this is broken, not just int8
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_BUILDING = threading.Lock()  # one export at a time in a process


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def workers() -> int:
    """Passes run side by side: ``URNA_TORCH_THREADS`` when set (collection builds set it
    per worker), else one per core."""
    threads = os.environ.get(THREADS_VARIABLE, "")
    return int(threads) if threads.isdigit() and int(threads) > 0 else max(1, os.cpu_count() or 1)


class Int8Encoder:
    """One model folder's int8 encoder. ``torch_model`` gives the loaded transformers model
    (``BertModel``, in eval mode) when an export is needed; it is not called when the cache
    has one."""

    def __init__(
        self,
        folder: Path,
        model_hash: str,
        window: int,
        torch_model: Callable[[], Any],
        reference: Callable[[list[str]], np.ndarray],
    ) -> None:
        self.folder, self.model_hash, self.window = folder, model_hash, window
        self._torch_model, self._reference = torch_model, reference

    @property
    def home(self) -> Path:
        return cache_dir() / "int8" / self.model_hash.removeprefix("sha256:")

    @cached_property
    def tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(max_length=self.window)
        return tok

    @cached_property
    def session(self) -> Any:
        return _open(self.model_file())

    def model_file(self) -> Path:
        """The quantized model, from the cache when its record vouches for it, else exported
        and checked now (and kept)."""
        with _BUILDING:
            found = self._vouched()
            if found is not None:
                return found
            self._export()
            found = self._vouched()
            if found is None:  # pragma: no cover - _export raised or wrote both
                raise ModelError(f"the int8 export in {self.home} did not verify")
            return found

    def _vouched(self) -> Path | None:
        model, record = self.home / "model.int8.onnx", self.home / "check.json"
        try:
            saved = json.loads(record.read_text())
            if (
                saved.get("export") == EXPORT
                and saved.get("model_hash") == self.model_hash
                and saved.get("ok") is True
                and saved.get("sha256") == _sha256(model)
            ):
                return model
        except (OSError, ValueError, AttributeError):
            pass
        return None

    def _export(self) -> None:
        why = why_unsupported(self.folder)
        if why:
            raise ModelError(f"int8 embedding supports BERT models with mean pooling; {why}")
        _onnxruntime()
        try:
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError:
            raise missing_extra("onnxruntime", "int8") from None
        try:
            import torch
        except ImportError:
            raise missing_extra("torch (to export the model once)", "embed") from None
        try:
            self.home.parent.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=".export-", dir=self.home.parent))
        except OSError as exc:
            raise ModelError(f"cannot write the int8 export in {self.home.parent}: {exc}") from None
        try:
            model = self._torch_model()
            plain, quantized = work / "model.onnx", work / "model.int8.onnx"
            ids = torch.ones((1, 16), dtype=torch.int64)
            with warnings.catch_warnings(), torch.inference_mode():
                warnings.simplefilter("ignore")  # the exporter's notes on traced control flow
                torch.onnx.export(
                    _last_hidden(model),
                    (ids, ids, torch.zeros_like(ids)),
                    str(plain),
                    input_names=list(_INPUTS),
                    output_names=["hidden"],
                    dynamic_axes={k: {0: "rows", 1: "tokens"} for k in (*_INPUTS, "hidden")},
                    opset_version=17,
                    dynamo=False,
                )
                logging.disable(logging.WARNING)  # its advice to pre-process, on the root logger
                try:
                    quantize_dynamic(
                        str(plain),
                        str(quantized),
                        weight_type=QuantType.QInt8,
                        reduce_range=True,  # 7-bit weights: no pair sum saturates (docstring)
                        per_channel=True,
                        extra_options={"MatMulConstBOnly": True},
                    )
                finally:
                    logging.disable(logging.NOTSET)
            plain.unlink()
            texts = list(PROBES)
            shipped = shipped_reference(self.model_hash)
            reference = shipped[1] if shipped is not None else self._reference(texts)
            ours = _embed(_open(quantized), self.tokenizer, self.window, texts)
            cosine = compare(np.asarray(reference, dtype=np.float32), ours)
            record = {
                "export": EXPORT,
                "model_hash": self.model_hash,
                "sha256": _sha256(quantized),
                "min_cosine": cosine,
                "ok": cosine >= MIN_COSINE,
            }
            (work / "check.json").write_text(json.dumps(record))
            if not record["ok"]:
                raise ModelError(
                    f"the int8 export of {self.folder.name} gives vectors at a cosine of "
                    f"{cosine:.4f} to float32 on the probe sentences (at least {MIN_COSINE} "
                    "expected): embed with --precision float32 or bfloat16"
                )
            old = self.home.with_name(self.home.name + ".old")
            shutil.rmtree(old, ignore_errors=True)
            try:
                if self.home.exists():
                    self.home.rename(old)
                work.rename(self.home)  # the model and its record appear together
            except OSError as exc:  # another process published one meanwhile: use it if sound
                if self._vouched() is None:
                    raise ModelError(f"cannot keep the int8 export in {self.home}: {exc}") from None
            shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit float32 vectors, one text per pass (see the module's docstring)."""
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        return _embed(self.session, self.tokenizer, self.window, texts)


def _embed(session: Any, tokenizer: Any, window: int, texts: Sequence[str]) -> np.ndarray:
    ids = [e.ids for e in tokenizer.encode_batch(list(texts))]

    def one(tokens: list[int]) -> np.ndarray:
        n = len(tokens)
        feed = {name: np.zeros((1, padded_length(n, window)), dtype=np.int64) for name in _INPUTS}
        feed["input_ids"][0, :n] = tokens
        feed["attention_mask"][0, :n] = 1
        hidden = session.run(None, feed)[0]
        return np.asarray(hidden[0, :n].mean(axis=0), dtype=np.float32)

    count = min(workers(), len(ids))
    if count > 1:
        with ThreadPoolExecutor(count, "urna-int8") as pool:
            rows = list(pool.map(one, ids))
    else:
        rows = [one(tokens) for tokens in ids]
    matrix = np.stack(rows)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1
    return (matrix / norms).astype(np.float32)


def _onnxruntime() -> Any:
    """The onnxruntime module, or one clear error: not installed, or not loadable in this
    process (usearch loaded by someone else first: ``urna/native.py``)."""
    if not onnxruntime_may_load():
        raise ModelError(
            "int8 embedding cannot start in a process that loaded usearch before urna "
            "(ONNX Runtime would crash it): import urna, or onnxruntime, before usearch"
        )
    try:
        import onnxruntime
    except ImportError:
        raise missing_extra("onnxruntime", "int8") from None
    return onnxruntime


def _open(path: Path) -> Any:
    """An ONNX Runtime session on one thread (one pass, one thread: no split of a product
    to change a bit)."""
    ort = _onnxruntime()

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # a cache file that ONNX Runtime cannot load
        raise ModelError(f"cannot load the int8 model {path}: {exc}") from None


def _last_hidden(model: Any) -> Any:
    """What is exported: the transformer's last hidden states (pooling stays in numpy)."""
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    # In eval mode: the exporter puts a module back in the mode it found it in, and a new
    # module is in training mode, which would turn the live model's dropout on.
    return LastHidden().eval()
