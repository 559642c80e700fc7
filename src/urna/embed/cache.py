"""The embedding cache: vectors keyed by (model_hash, SHA-256 of the embedded text).

A vector depends only on the model and the text it embeds, so keying by the
text (rather than by chunk_id, which also covers the span) means a chunk that
only moved inside its file is never embedded again. Stored in one SQLite file
under the cache folder; every write is a transaction.

Several build processes may share the file (``--jobs``). SQLite answers "database is locked"
without waiting in a few cases its busy timeout does not cover (two connections switching a
new file to WAL at once, or a deferred transaction that cannot upgrade), so the setup and
each write are retried, bounded in time.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Sequence
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


RETRY_SECONDS = 60.0


def _retrying(step: Callable[[], None]) -> None:
    """Run ``step``, again after a pause while SQLite says the file is locked or busy."""
    deadline = time.monotonic() + RETRY_SECONDS
    pause = 0.01
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(0.5, pause * 2)


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), timeout=30, isolation_level=None)

        def setup() -> None:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(SCHEMA)

        _retrying(setup)

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

        def write() -> None:
            self._db.execute("BEGIN IMMEDIATE")  # the write lock first: no upgrade to fail
            try:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

        _retrying(write)

    def close(self) -> None:
        self._db.close()
