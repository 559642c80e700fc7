"""The query-embedding cache: a query's vector, kept in memory by model and text.

A query's vector is a function of the model, its precision and the text alone
(``embed/batching.py``: passes of one shape, so no batchmate changes a bit), so a cached
vector *is* the vector, and an agent that repeats a query skips the model. The cache holds
``URNA_QUERY_CACHE`` vectors (default 4,096, about 6 MB at 384 dimensions; 0 turns it
off), least recently used out first. It is keyed by the model hash, precision and device
as well as the text, and one lock guards it, so the server's threads share it. Hand-written: an
``OrderedDict`` under a lock is the whole of it, and ``functools.lru_cache`` can neither
batch the misses of one call nor report its counts.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from urna.embed.base import Embedder
from urna.embed.device import arithmetic, device_of

SIZE_VARIABLE = "URNA_QUERY_CACHE"
DEFAULT_SIZE = 4096


def cache_size() -> int:
    """``URNA_QUERY_CACHE`` as an entry count (a malformed value keeps the default)."""
    raw = os.environ.get(SIZE_VARIABLE, "").strip()
    return int(raw) if raw.isdigit() else DEFAULT_SIZE


class CachedQueries:
    """An embedder whose ``embed`` answers repeated texts from memory; the rest is the
    wrapped embedder's."""

    def __init__(self, inner: Embedder, size: int | None = None) -> None:
        self.inner = inner
        self.size = cache_size() if size is None else size
        self._vectors: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def model_hash(self) -> str:
        return self.inner.model_hash

    @property
    def precision(self) -> str:
        return self.inner.precision

    @property
    def batching(self) -> str:
        return self.inner.batching

    @property
    def max_tokens(self) -> int:
        return self.inner.max_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def load(self) -> None:
        self.inner.load()

    def _key(self, text: str) -> tuple[str, str, str]:
        return (
            self.inner.model_hash,
            arithmetic(self.inner.precision, device_of(self.inner)),
            text,
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if self.size <= 0 or not texts:
            return self.inner.embed(texts)
        keys = [self._key(t) for t in texts]
        out = np.empty((len(texts), self.inner.dim), dtype=np.float32)
        missing: list[int] = []
        with self._lock:
            for i, key in enumerate(keys):
                found = self._vectors.get(key)
                if found is None:
                    missing.append(i)
                else:
                    self._vectors.move_to_end(key)
                    out[i] = found
            self.hits += len(texts) - len(missing)
            self.misses += len(missing)
        if missing:
            fresh = np.asarray(self.inner.embed([texts[i] for i in missing]), dtype=np.float32)
            out[missing] = fresh
            with self._lock:
                for i, row in zip(missing, fresh, strict=True):
                    kept = row.copy()
                    kept.flags.writeable = False
                    self._vectors[keys[i]] = kept
                    self._vectors.move_to_end(keys[i])
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        return out

    def __len__(self) -> int:
        return len(self._vectors)
