"""The embedding cache: vectors keyed by (model_hash, SHA-256 of the embedded text).

A vector depends only on the model and the text it embeds, so keying by the
text (rather than by chunk_id, which also covers the span) means a chunk that
only moved inside its file is never embedded again. Stored in one SQLite file
under the cache folder; every write is a transaction.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model_hash TEXT NOT NULL,
    text_hash BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_hash, text_hash)
) WITHOUT ROWID
"""


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(SCHEMA)
        self._db.commit()

    def get_many(self, model_hash: str, texts: Sequence[str], dim: int) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = []
        keys = [text_key(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        step = 500
        for i in range(0, len(keys), step):
            part = keys[i : i + step]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT text_hash, dim, vector FROM vectors WHERE model_hash = ? "
                f"AND text_hash IN ({marks})",
                [model_hash, *part],
            )
            for key, d, blob in rows:
                if d == dim and len(blob) == 4 * dim:
                    found[key] = np.frombuffer(blob, dtype="<f4").copy()
        for key in keys:
            out.append(found.get(key))
        return out

    def put_many(self, model_hash: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        rows = [
            (model_hash, text_key(t), int(v.shape[0]), np.asarray(v, dtype="<f4").tobytes())
            for t, v in zip(texts, vectors, strict=True)
        ]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)

    def close(self) -> None:
        self._db.close()
