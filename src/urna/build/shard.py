"""One shard of a full collection build: a worker's whole job, given file paths (never
vectors), in this process, a local process or a Ray actor.

The worker loads the files it is given, keeps the documents whose bucket lies in its range,
sorts them by source_uri, chunks them and writes the shard with the one writer
(``build/segment.py``): texts its previous shard already holds reuse those vectors, the rest
come from the cache or are embedded together in length order. So a shard's bytes depend on
its sources alone, not on which machine of a kind, process, thread count or Ray actor built
it, nor on what the cache held.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from urna.build.discover import Found
from urna.build.documents import Origin, canonical_order, chunk, file_sha, load_files, rows_for
from urna.build.segment import write_segment
from urna.build.spec import BuildSpec
from urna.build.summary import quiet
from urna.build.target import Target
from urna.build.vectors import Earlier, OpenFiles
from urna.embed.base import Embedder
from urna.embed.registry import resolve
from urna.errors import BuildError
from urna.format.partition import bucket_of


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
    dropped: frozenset[str] = frozenset()  # duplicates of documents kept (the plan's)
    precision: str | None = None  # the writer's embedding precision, for workers that load


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


def shard_docs(task: ShardTask) -> list[Origin]:
    """The shard's documents (sorted by source_uri) and the files they came from."""
    lo, hi = task.buckets
    out: list[Origin] = []
    for found, loaded in load_files(task.files, None, quiet, task.spec.fields, task.spec.lang):
        mine = [
            d
            for d in loaded
            if lo <= bucket_of(d.source_uri, task.n_buckets) < hi
            and d.source_uri not in task.dropped
        ]
        sha = file_sha(found.location) if mine else ""
        out.extend(Origin(d, found.source_uri, sha) for d in mine)
    out.sort(key=lambda o: canonical_order(o.doc))
    return out


def build_shard(task: ShardTask, embedder: Embedder | None = None) -> ShardReport:
    """Load, chunk, embed and write one shard; returns what the catalog records of it."""
    t0 = time.perf_counter()
    spec = task.spec
    embedder = embedder or resolve(spec.model, model_path=spec.model_path, precision=task.precision)
    origins = shard_docs(task)
    spans = chunk([o.doc for o in origins], embedder, spec, task.max_tokens)
    if not spans:
        raise BuildError(f"shard {task.index} has no chunk to write")
    target = Target(spec, task.output.parent, embedder, task.max_tokens, "", task.use_cache)
    files = OpenFiles()
    try:
        earlier = Earlier(task.previous, embedder, files)
        rows = rows_for(origins, spans)
        written = write_segment(target, task.output.name, spans, rows, earlier=earlier)
    finally:
        files.close()
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
