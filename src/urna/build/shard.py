"""Build one shard of a collection: a worker's whole job, given file paths (never vectors).

The worker loads the files it is given, keeps the documents whose bucket lies in its range,
sorts them by source_uri, chunks them and embeds the shard as one unit: texts its previous
shard already holds reuse those vectors, the rest are embedded together in length order.
So a shard's bytes depend on its sources alone, not on which machine of a kind, process,
thread count or Ray actor built it, nor on what the cache held.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from urna.build.discover import Found
from urna.build.run import canonical_order, embed_all, load_files, write_spans
from urna.build.spec import BuildSpec
from urna.embed.base import Embedder, cache_dir
from urna.embed.cache import EmbeddingCache
from urna.embed.registry import resolve
from urna.errors import BuildError
from urna.format.partition import bucket_of
from urna.ingest.chunker import ChunkSpan, chunk_documents
from urna.ingest.context import NO_CONTEXT, RECIPES, embedded_texts
from urna.search.corpus import Corpus, open_corpus


@dataclass(frozen=True)
class ShardTask:
    index: int
    output: Path  # the shard file to write (inside the collection folder)
    files: tuple[Found, ...]  # the files holding this shard's sources
    buckets: tuple[int, int]
    n_buckets: int
    spec: BuildSpec
    max_tokens: int
    previous: tuple[Path, ...] = ()  # earlier shards whose vectors may be reused
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
    """Vectors of earlier shards, by the exact text they embedded (the ``get_many`` of a cache),
    from shards whose vectors the embedder would give again bit for bit."""

    def __init__(self, paths: Sequence[Path], embedder: Embedder) -> None:
        model_hash, dim = embedder.model_hash, embedder.dim
        self._shards: list[Corpus] = []
        self._where: dict[str, tuple[int, int]] = {}
        for path in paths:
            try:
                shard = open_corpus(path, verify="trusted")
            except Exception:  # an unreadable earlier shard is only a missed reuse
                continue
            usable = (
                shard.model_hash == model_hash
                and shard.dim == dim
                and shard.dtype == "float32"
                and shard.manifest.get("embed_context", NO_CONTEXT) in RECIPES
                and shard.manifest.get("embed_precision", "float32") == embedder.precision
                and shard.manifest.get("embed_batching", "") == embedder.batching
            )
            if not usable:
                shard.close()
                continue
            self._shards.append(shard)
            s = len(self._shards) - 1
            # Keyed by the text each vector embedded, under the recipe the shard records.
            recipe = shard.manifest.get("embed_context", NO_CONTEXT)
            chunks = [shard.chunk(i) for i in range(shard.n_chunks)]
            for i, text in enumerate(embedded_texts(chunks, recipe)):
                self._where.setdefault(text, (s, i))

    def get_many(self, model_hash: str, texts: Sequence[str], dim: int) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = []
        for text in texts:
            found = self._where.get(text)
            out.append(None if found is None else self._shards[found[0]].embedding(found[1]))
        return out

    def put_many(self, model_hash: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        return None

    def close(self) -> None:
        for shard in self._shards:
            shard.close()


class Chained:
    """The previous shards first, then the embedding cache (which also keeps what is new)."""

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


def shard_spans(task: ShardTask, embedder: Embedder) -> tuple[list[ChunkSpan], int, int]:
    """The shard's chunks (sources sorted by source_uri), its source and file counts."""
    lo, hi = task.buckets
    docs = []
    files = 0
    for _, loaded in load_files(list(task.files), None, lambda _: None, task.spec.fields):
        mine = [d for d in loaded if lo <= bucket_of(d.source_uri, task.n_buckets) < hi]
        files += bool(mine)
        docs.extend(mine)
    docs.sort(key=canonical_order)
    pieces = chunk_documents(
        docs,
        embedder.count_tokens,
        max_tokens=task.max_tokens,
        overlap_tokens=task.spec.overlap_tokens,
    )
    return [s for group in pieces for s in group], len(docs), files


def build_shard(task: ShardTask, embedder: Embedder | None = None) -> ShardReport:
    """Load, chunk, embed and write one shard; returns what the catalog records of it.

    Vectors come from the shard's previous files, then from the embedding cache, and only
    then from the model: all three hold the same bits for the same text (vectors are
    batch-invariant, ``embed/batching.py``), so a shard's bytes do not depend on which of
    them served it, nor on the process, thread count or Ray actor that built it."""
    return _build_shard(task, embedder)


def _build_shard(task: ShardTask, embedder: Embedder | None) -> ShardReport:
    t0 = time.perf_counter()
    spec = task.spec
    embedder = embedder or resolve(spec.model, model_path=spec.model_path)
    spans, sources, files = shard_spans(task, embedder)
    if not spans:
        raise BuildError(f"shard {task.index} has no chunk to write")
    previous = PreviousShards(task.previous, embedder)
    cache = EmbeddingCache(cache_dir() / "embeddings.sqlite") if task.use_cache else None
    try:
        texts = embedded_texts(spans)
        vectors, embedded, spaces = embed_all(
            spec, embedder, texts, Chained(previous, cache), lambda _: None, False
        )
    finally:
        previous.close()
        if cache is not None:
            cache.close()
    result = write_spans(
        spec, task.output, embedder, spans, vectors, spaces, task.max_tokens, files, lambda _: None
    )
    with open_corpus(task.output, verify="trusted") as written:
        bm25 = written.bm25
        total = int(bm25.doc_len.sum(dtype=np.int64)) if bm25 is not None else None
    return ShardReport(
        index=task.index,
        file=task.output.name,
        n_chunks=result.n_chunks,
        sources=sources,
        embedded=embedded,
        reused=len(spans) - embedded,
        file_hash=result.file_hash,
        content_hash=result.content_hash,
        bm25_total_length=total,
        seconds=time.perf_counter() - t0,
    )
