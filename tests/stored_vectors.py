"""A stand-in embedder whose vectors are stored, not computed: each text's vector comes from
its SHA-256 (four of eight components +-0.5, so it is a unit vector in any arithmetic). A
build with it gives the same bytes on every CPU, which lets a test pin a build's bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

DIM = 8


class StoredVectors:
    name = "test/stored-vectors"
    dim = DIM
    model_hash = "sha256:" + "ab" * 32
    precision = "float32"
    batching = ""
    max_tokens = 64

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def load(self) -> None:
        return None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            h = hashlib.sha256(text.encode()).digest()
            picks = sorted({h[j] % DIM for j in range(16)})[:4]
            while len(picks) < 4:
                picks.append(next(p for p in range(DIM) if p not in picks))
            for n, p in enumerate(picks):
                out[i, p] = 0.5 if h[16 + n] & 1 else -0.5
        return out
