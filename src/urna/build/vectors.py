"""The vectors stage: every chunk's vector from earlier files, then the embedding cache, then
the model, in that order. All three hold the same bits for the same text (vectors are
batch-invariant, ``embed/batching.py``), so a file's bytes never depend on which of them
served it, nor on the process, thread count or Ray actor that built it.

Earlier files are read as stored chunks (``format/chunks.py``), never as searchable
corpora. A writer keeps the ones its head names open (``OpenFiles``): a watching server
updates the same collection again and again, and data files are immutable (a new content
gets a new name), so the same path, inode, size and mtime is the same file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from urna.build.progress import Mode, Progress
from urna.build.summary import Report, quiet
from urna.embed.base import Embedder
from urna.embed.device import arithmetic, device_of
from urna.embed.precision import cache_key
from urna.format.chunks import ChunkStore
from urna.format.reader import Container
from urna.ingest.context import NO_CONTEXT, RECIPES, embedded_texts

PROGRESS_BATCH = 512


class VectorSource(Protocol):
    """Where known vectors come from: the embedding cache, or earlier files."""

    def get_many(
        self, model_hash: str, texts: Sequence[str], dim: int
    ) -> list[np.ndarray | None]: ...

    def put_many(self, model_hash: str, texts: Sequence[str], vectors: np.ndarray) -> None: ...


class OpenFiles:
    """Earlier data files a writer opened (structural checks: they were verified when
    written), or that their reader lent it (a watching server serves the files its next
    update reads). A writer keeps those its new head names for its next update (``keep``)
    and closes the rest it opened; a lent file is its lender's to close. Nothing is left to
    the garbage collector."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, int, int, int], tuple[Container, bool]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(path: Path) -> tuple[str, int, int, int]:
        st = os.stat(path)
        return (str(path), st.st_ino, st.st_size, st.st_mtime_ns)

    def get(self, path: Path) -> Container:
        key = self._key(path)
        with self._lock:
            found = self._open.get(key)
        if found is not None:
            return found[0]
        opened = Container(path, verify="trusted")
        with self._lock:
            self._open[key] = (opened, False)
        return opened

    def lend(self, path: Path, container: Container) -> None:
        """Read ``path`` from ``container``, opened and checked by its lender."""
        key = self._key(path)
        with self._lock:
            found = self._open.pop(key, None)
            self._open[key] = (container, True)
        if found is not None and not found[1]:
            found[0].close()

    def keep(self, paths: Sequence[Path]) -> None:
        """Let go of every file but these (closing those this writer opened)."""
        wanted = {str(p) for p in paths}
        with self._lock:
            gone = [k for k in self._open if k[0] not in wanted]
            closing = [self._open.pop(k) for k in gone]
        for container, lent in closing:
            if not lent:
                container.close()

    def close(self) -> None:
        self.keep(())


class Earlier:
    """Vectors of earlier files by the exact text they embedded (the ``get_many`` of a
    cache), from files whose vectors the embedder would give again bit for bit. ``ranges``
    (one per path, None for all) limits each file to the chunks worth reading."""

    def __init__(
        self,
        paths: Sequence[Path],
        embedder: Embedder,
        files: OpenFiles,
        ranges: Sequence[Sequence[tuple[int, int]] | None] | None = None,
    ) -> None:
        device = device_of(embedder)
        self._key = cache_key(
            embedder.model_hash, arithmetic(embedder.precision, device), embedder.batching
        )
        self._stores: list[ChunkStore] = []
        self._where: dict[str, tuple[int, int]] = {}
        for n, path in enumerate(paths):
            try:
                container = files.get(path)
            except Exception:  # an unreadable earlier file is only a missed reuse
                continue
            manifest = container.manifest
            recipe = manifest.get("embed_context", NO_CONTEXT)
            usable = (
                manifest["model_hash"] == embedder.model_hash
                and manifest["embedding_dim"] == embedder.dim
                and manifest["dtype"] == "float32"
                and recipe in RECIPES
                and manifest.get("embed_precision", "float32") == embedder.precision
                and manifest.get("embed_batching", "") == embedder.batching
                and manifest.get("embed_device", "cpu") == device
            )
            if not usable:
                continue
            store = ChunkStore(container)
            self._stores.append(store)
            s = len(self._stores) - 1
            wanted = ranges[n] if ranges is not None else None
            spans = [(0, store.n)] if wanted is None else wanted
            ordinals = [i for lo, hi in spans for i in range(lo, hi)]
            # Keyed by the text each vector embedded, under the recipe the file records.
            chunks = [store.chunk(i) for i in ordinals]
            for i, text in zip(ordinals, embedded_texts(chunks, recipe), strict=True):
                self._where.setdefault(text, (s, i))

    def get_many(self, model_hash: str, texts: Sequence[str], dim: int) -> list[np.ndarray | None]:
        if model_hash != self._key:  # another space's model: these vectors are not its
            return [None] * len(texts)
        out: list[np.ndarray | None] = []
        for text in texts:
            found = self._where.get(text)
            out.append(None if found is None else self._stores[found[0]].embedding(found[1]))
        return out

    def put_many(self, model_hash: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        return None


class Chained:
    """The earlier files first, then the embedding cache (which also keeps what is new)."""

    def __init__(self, first: VectorSource | None, cache: VectorSource | None) -> None:
        self._first = first
        self._cache = cache

    def get_many(self, model_hash: str, texts: Sequence[str], dim: int) -> list[np.ndarray | None]:
        found: list[np.ndarray | None] = (
            self._first.get_many(model_hash, texts, dim) if self._first else [None] * len(texts)
        )
        missing = [i for i, v in enumerate(found) if v is None]
        if self._cache is not None and missing:
            more = self._cache.get_many(model_hash, [texts[i] for i in missing], dim)
            for i, v in zip(missing, more, strict=True):
                found[i] = v
        return found

    def put_many(self, model_hash: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        if self._cache is not None:
            self._cache.put_many(model_hash, texts, vectors)


def embed_known(
    embedder: Embedder,
    texts: list[str],
    known: VectorSource | None,
    report: Report = quiet,
    progress: Mode = "off",
    tell: Report = quiet,
) -> tuple[np.ndarray, int]:
    """Vectors for every text, embedding only those ``known`` lacks; the matrix and how many
    of the texts were embedded now (a text that appears twice is embedded once but counted
    twice). New vectors are embedded in slices of 512 texts (always: the batches, and so
    the bits, never depend on whether progress is shown) and each slice is handed to
    ``known`` as it is done: the embedding cache commits it, so a build stopped at any
    point (Ctrl-C, kill -9) and run again embeds only what it had not finished."""
    out = np.empty((len(texts), embedder.dim), dtype=np.float32)
    key = cache_key(
        embedder.model_hash, arithmetic(embedder.precision, device_of(embedder)), embedder.batching
    )
    found = known.get_many(key, texts, embedder.dim) if known else [None] * len(texts)
    todo: dict[str, list[int]] = {}
    for i, (text, vec) in enumerate(zip(texts, found, strict=True)):
        if vec is None:
            todo.setdefault(text, []).append(i)
        else:
            out[i] = vec
    if todo:
        unique = sorted(todo, key=len)  # length-sorted batches: little padding
        reused = len(texts) - sum(len(at) for at in todo.values())
        report(f"embed: {len(unique)} texts with {embedder.name} ({reused} chunks reused)")
        with Progress("embed", len(unique), "chunk", progress, tell) as shown:
            for start in range(0, len(unique), PROGRESS_BATCH):
                part = unique[start : start + PROGRESS_BATCH]
                vectors = embedder.embed(part)
                for text, vec in zip(part, vectors, strict=True):
                    out[todo[text]] = vec
                if known:
                    known.put_many(key, part, vectors)
                shown.advance(len(part))
    return out, sum(len(positions) for positions in todo.values())
