"""Build one shard of a collection: a worker's whole job, given file paths (never vectors).

The worker loads the files it is given, keeps the documents whose bucket lies in its range,
sorts them by source_uri, chunks them and embeds the shard as one unit: texts its previous
shard already holds reuse those vectors, the rest are embedded together in length order.
So a shard's bytes depend on its sources alone, not on which machine of a kind, process,
thread count or Ray actor built it, nor on what the cache held.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from urna.build.changes import Origin, file_sha, rows_for
from urna.build.discover import Found
from urna.build.run import canonical_order, embed_all, load_files, write_spans
from urna.build.spec import BuildSpec
from urna.embed.base import Embedder, cache_dir
from urna.embed.cache import EmbeddingCache
from urna.embed.device import arithmetic, device_of
from urna.embed.precision import cache_key
from urna.embed.registry import resolve
from urna.errors import BuildError
from urna.format.partition import bucket_of
from urna.format.sources import SourceRow, write_table
from urna.ingest.chunker import ChunkSpan, chunk_documents
from urna.ingest.context import NO_CONTEXT, RECIPES, embedded_texts
from urna.search.corpus import open_corpus
from urna.search.fileshard import FileShard


@dataclass(frozen=True)
class ShardTask:
    index: int
    output: Path  # the shard file to write (inside the collection folder)
    files: tuple[Found, ...]  # the files holding this shard's sources
    buckets: tuple[int, int]
    n_buckets: int
    spec: BuildSpec
    max_tokens: int
    previous: tuple[Path, ...] = ()  # earlier files whose vectors may be reused
    use_cache: bool = True  # the embedding cache (off with --rebuild)


@dataclass(frozen=True)
class ShardReport:
    index: int
    file: str
    n_chunks: int
    sources: int
    embedded: int
    reused: int
    file_hash: str
    content_hash: str
    bm25_total_length: int | None
    seconds: float


class PreviousShards:
    """Vectors of earlier files, by the exact text they embedded (the ``get_many`` of a cache),
    from files whose vectors the embedder would give again bit for bit. ``ranges`` (one per
    path, None for all) limits each file to the chunks worth reading."""

    def __init__(
        self,
        paths: Sequence[Path],
        embedder: Embedder,
        ranges: Sequence[Sequence[tuple[int, int]] | None] | None = None,
    ) -> None:
        model_hash, dim = embedder.model_hash, embedder.dim
        device = device_of(embedder)
        self._key = cache_key(model_hash, arithmetic(embedder.precision, device), embedder.batching)
        self._shards: list[FileShard] = []
        self._where: dict[str, tuple[int, int]] = {}
        for n, path in enumerate(paths):
            try:
                shard = _opened(path)
            except Exception:  # an unreadable earlier file is only a missed reuse
                continue
            usable = (
                shard.model_hash == model_hash
                and shard.dim == dim
                and shard.dtype == "float32"
                and shard.manifest.get("embed_context", NO_CONTEXT) in RECIPES
                and shard.manifest.get("embed_precision", "float32") == embedder.precision
                and shard.manifest.get("embed_batching", "") == embedder.batching
                and shard.manifest.get("embed_device", "cpu") == device
            )
            if not usable:
                continue
            self._shards.append(shard)
            s = len(self._shards) - 1
            wanted = ranges[n] if ranges is not None else None
            spans = [(0, shard.n_chunks)] if wanted is None else wanted
            ordinals = [i for lo, hi in spans for i in range(lo, hi)]
            # Keyed by the text each vector embedded, under the recipe the file records.
            recipe = shard.manifest.get("embed_context", NO_CONTEXT)
            chunks = [shard.chunk(i) for i in ordinals]
            for i, text in zip(ordinals, embedded_texts(chunks, recipe), strict=True):
                self._where.setdefault(text, (s, i))

    def get_many(self, model_hash: str, texts: Sequence[str], dim: int) -> list[np.ndarray | None]:
        if model_hash != self._key:  # another space's model: these vectors are not its
            return [None] * len(texts)
        out: list[np.ndarray | None] = []
        for text in texts:
            found = self._where.get(text)
            out.append(None if found is None else self._shards[found[0]].embedding(found[1]))
        return out

    def put_many(self, model_hash: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        return None

    def close(self) -> None:
        self._shards.clear()  # the files stay open in ``_OPENED`` for the next update


_OPENED: OrderedDict[tuple[str, int, int, int], FileShard] = OrderedDict()
_OPENED_LOCK = threading.Lock()
OPENED = 8  # earlier files kept open in a process (a watching server updates again and again)


def _key(path: Path) -> tuple[str, int, int, int]:
    st = os.stat(path)
    return (str(path), st.st_ino, st.st_size, st.st_mtime_ns)


def _opened(path: Path) -> FileShard:
    """An earlier file, opened once per process: data files are immutable (a new content
    gets a new name), so the same path, inode, size and mtime is the same file."""
    key = _key(path)
    with _OPENED_LOCK:
        found = _OPENED.get(key)
        if found is not None:
            _OPENED.move_to_end(key)
            return found
    opened = open_corpus(path, verify="trusted")
    share(path, opened)
    return opened


def share(path: Path, shard: FileShard) -> None:
    """Offer an open file to later updates (a server lends the files it serves)."""
    try:
        key = _key(path)
    except OSError:
        return
    with _OPENED_LOCK:
        _OPENED[key] = shard
        _OPENED.move_to_end(key)
        while len(_OPENED) > OPENED:
            _OPENED.popitem(last=False)  # closed when its last user lets go (its map is GC'd)


class Chained:
    """The previous files first, then the embedding cache (which also keeps what is new)."""

    def __init__(self, first: PreviousShards, cache: EmbeddingCache | None) -> None:
        self._first = first
        self._cache = cache

    def get_many(self, model_hash: str, texts: Sequence[str], dim: int) -> list[np.ndarray | None]:
        found = self._first.get_many(model_hash, texts, dim)
        missing = [i for i, v in enumerate(found) if v is None]
        if self._cache is not None and missing:
            more = self._cache.get_many(model_hash, [texts[i] for i in missing], dim)
            for i, v in zip(missing, more, strict=True):
                found[i] = v
        return found

    def put_many(self, model_hash: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        if self._cache is not None:
            self._cache.put_many(model_hash, texts, vectors)


def shard_docs(task: ShardTask) -> list[Origin]:
    """The shard's documents (sorted by source_uri) and the files they came from."""
    lo, hi = task.buckets
    out: list[Origin] = []
    for found, loaded in load_files(list(task.files), None, lambda _: None, task.spec.fields):
        mine = [d for d in loaded if lo <= bucket_of(d.source_uri, task.n_buckets) < hi]
        sha = file_sha(found.location) if mine else ""
        out.extend(Origin(d, found.source_uri, sha) for d in mine)
    out.sort(key=lambda o: canonical_order(o.doc))
    return out


def chunk_origins(
    origins: Sequence[Origin], embedder: Embedder, spec: BuildSpec, max_tokens: int
) -> list[ChunkSpan]:
    """The chunks of these documents, in their order."""
    pieces = chunk_documents(
        [o.doc for o in origins],
        embedder.count_tokens,
        max_tokens=max_tokens,
        overlap_tokens=spec.overlap_tokens,
    )
    return [s for group in pieces for s in group]


@dataclass(frozen=True)
class Written:
    """A data file just written: what the catalog records of it, and its source table."""

    file: str
    n_chunks: int
    embedded: int
    file_hash: str
    content_hash: str
    bm25_total_length: int | None
    rows: tuple[SourceRow, ...]


def write_file(
    spec: BuildSpec,
    out: Path,
    embedder: Embedder,
    spans: list[ChunkSpan],
    rows: Sequence[SourceRow],
    max_tokens: int,
    vectors_from: PreviousShards,
    use_cache: bool,
) -> Written:
    """Embed (reusing what ``vectors_from`` and the cache hold) and write one data file and
    its source table; the table first, so a catalog never names a file without one."""
    cache = EmbeddingCache(cache_dir() / "embeddings.sqlite") if use_cache else None
    try:
        texts = embedded_texts(spans)
        vectors, embedded, spaces = embed_all(
            spec, embedder, texts, Chained(vectors_from, cache), lambda _: None, False
        )
    finally:
        if cache is not None:
            cache.close()
    files = len({r.file for r in rows})
    write_table(out, list(rows))
    result = write_spans(spec, out, embedder, spans, vectors, spaces, max_tokens, files, _quiet)
    with open_corpus(out, verify="trusted") as written:
        bm25 = written.bm25
        total = int(bm25.doc_len.sum(dtype=np.int64)) if bm25 is not None else None
    return Written(
        out.name,
        result.n_chunks,
        embedded,
        result.file_hash,
        result.content_hash,
        total,
        tuple(rows),
    )


def _quiet(_: str) -> None:
    return None


def build_shard(task: ShardTask, embedder: Embedder | None = None) -> ShardReport:
    """Load, chunk, embed and write one shard; returns what the catalog records of it.

    Vectors come from the shard's previous files, then from the embedding cache, and only
    then from the model: all three hold the same bits for the same text (vectors are
    batch-invariant, ``embed/batching.py``), so a shard's bytes do not depend on which of
    them served it, nor on the process, thread count or Ray actor that built it."""
    t0 = time.perf_counter()
    spec = task.spec
    embedder = embedder or resolve(spec.model, model_path=spec.model_path)
    origins = shard_docs(task)
    spans = chunk_origins(origins, embedder, spec, task.max_tokens)
    if not spans:
        raise BuildError(f"shard {task.index} has no chunk to write")
    previous = PreviousShards(task.previous, embedder)
    try:
        written = write_file(
            spec,
            task.output,
            embedder,
            spans,
            rows_for(origins, spans),
            task.max_tokens,
            previous,
            task.use_cache,
        )
    finally:
        previous.close()
    return ShardReport(
        index=task.index,
        file=written.file,
        n_chunks=written.n_chunks,
        sources=len(origins),
        embedded=written.embedded,
        reused=len(spans) - written.embedded,
        file_hash=written.file_hash,
        content_hash=written.content_hash,
        bm25_total_length=written.bm25_total_length,
        seconds=time.perf_counter() - t0,
    )
