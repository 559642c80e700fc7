"""Static embedders through model2vec: a model distilled from MiniLM here, or a hub model."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from urna.embed.base import cache_dir, count_with, quiet_hub_logging, unit_rows
from urna.embed.hub import MINILM, bundled_minilm, hub_snapshot
from urna.embed.model_hash import model_hash
from urna.errors import ModelError, missing_extra

MINILM_STATIC = "urna/all-MiniLM-L6-v2-static256"
STATIC_WINDOW = 512
log = logging.getLogger(__name__)


def distilled_minilm() -> Path:
    """The static 256-dim model distilled from the bundled MiniLM, made once and cached.

    The folder keeps only what defines the model (config, weights, tokenizer),
    with the tokenizer named by its public name instead of a path on the building machine,
    so that the same distillation gives the same model_hash everywhere.
    """
    target = cache_dir() / "models" / "all-MiniLM-L6-v2-static256"
    if (target / "model.safetensors").exists():
        return target
    quiet_hub_logging()
    try:
        from model2vec.distill import distill
    except ImportError:
        raise missing_extra("model2vec[distill]") from None
    source = bundled_minilm()
    log.info("distilling a static model from %s (once; cached in %s)", source, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".distill-", dir=target.parent))
    try:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # model2vec draws a bar per batch of its vocabulary (tqdm reads TQDM_DISABLE when it
        # is imported, not when a bar starts): its stderr goes nowhere instead, one line of
        # ours says what is happening.
        sys.stderr.write("distilling the static model from MiniLM, once (15 s on 2 idle cores)\n")
        with contextlib.redirect_stderr(io.StringIO()):
            model = distill(model_name=str(source), pca_dims=256, quantize_to="float32")
        model.save_pretrained(str(tmp))
        (tmp / "README.md").unlink(missing_ok=True)
        config = json.loads((tmp / "config.json").read_text())
        config["tokenizer_name"] = MINILM
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        with contextlib.suppress(OSError):
            os.replace(tmp, target)  # another process may have won the race: keep its copy
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


class StaticEmbedder:
    """A model2vec StaticModel from a folder (or a hub name such as minishlab/potion-base-8M)."""

    def __init__(
        self, name: str, source: str | Path | None = None, *, download: bool = True
    ) -> None:
        self._name = name
        self._source = source
        self._download = download
        # model2vec's encode sets truncation on the tokenizer it shares with every caller:
        # two threads in it at once fail ("Already borrowed"). One at a time costs a query
        # microseconds (a lookup and a mean), where a model copy per thread costs memory.
        self._encoding = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def precision(self) -> str:
        return "float32"  # a lookup table and a mean: nothing to gain from bfloat16

    batching = ""  # each text's vector is its own tokens' mean: no batch to depend on

    @cached_property
    def folder(self) -> Path | None:
        if self._source is None:
            return distilled_minilm()
        path = Path(self._source)
        return path if path.is_dir() else hub_snapshot(str(self._source), download=self._download)

    @cached_property
    def _model(self) -> Any:
        quiet_hub_logging(transformers=False)
        try:
            from model2vec import StaticModel
        except ImportError:
            raise missing_extra("model2vec") from None
        where = str(self.folder) if self.folder is not None else str(self._source)
        try:
            return StaticModel.from_pretrained(where)
        except Exception as exc:
            raise ModelError(f"cannot load static model {where}: {exc}") from None

    @cached_property
    def dim(self) -> int:
        return int(self._model.dim)

    @cached_property
    def model_hash(self) -> str:
        if self.folder is None:
            raise ModelError(f"model {self._source} has no local folder to hash")
        return model_hash(self.folder)

    @property
    def max_tokens(self) -> int:
        return STATIC_WINDOW

    @cached_property
    def _tokenizer(self) -> Any:
        """A copy of the model's tokenizer that counts every token: the model's own one is
        shared with ``encode``, which turns truncation on (counts taken after an embed were
        cut at 512, so chunking depended on what ran before in the process)."""
        from tokenizers import Tokenizer

        tok = Tokenizer.from_str(self._model.tokenizer.to_str())
        tok.no_padding()
        tok.no_truncation()
        return tok

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return count_with(self._tokenizer, texts)

    def load(self) -> None:
        """Load the weights now (otherwise the first embed does)."""
        _ = self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        model = self._model
        with self._encoding:
            vectors = model.encode(list(texts), max_length=None, show_progress_bar=False)
        return unit_rows(vectors)
