"""Run a build: discover, load, chunk, embed (with the cache), write atomically, verify."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from urna import __version__
from urna.build.discover import Found, discover
from urna.build.fields import FieldRules
from urna.build.spec import BuildSpec, resolved
from urna.build.write import BuildResult, build
from urna.embed.base import Embedder, cache_dir
from urna.embed.cache import EmbeddingCache
from urna.embed.device import arithmetic, device_of
from urna.embed.precision import cache_key
from urna.embed.registry import resolve
from urna.errors import BuildError, UrnaError
from urna.format.atomic import make_folder
from urna.ingest.chunker import CHUNKER_VERSION, ChunkSpan, chunk_documents
from urna.ingest.context import CONTEXT_RECIPE, embedded_texts
from urna.ingest.document import Document
from urna.ingest.loaders import load

Report = Callable[[str], None]
log = logging.getLogger(__name__)


@dataclass
class BuildSummary:
    output: Path
    files: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    documents: int = 0
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    size: int = 0
    seconds: float = 0.0
    file_hash: str = ""
    content_hash: str = ""
    model: str = ""
    dry_run: bool = False
    timings: dict[str, float] = field(default_factory=dict)


def chunker_version(max_tokens: int, overlap: int) -> str:
    return f"{CHUNKER_VERSION} max_tokens={max_tokens} overlap={overlap}"


def _quiet(_: str) -> None:
    return None


PROGRESS_BATCH = 512


def _embed_in_slices(embedder: Embedder, texts: list[str], bar: bool) -> np.ndarray:
    """Embed in slices of 512 texts (always: the batches, and so the bits, never depend on
    whether a progress bar is shown), with a bar on stderr when asked."""
    progress = None
    if bar:
        try:
            from tqdm import tqdm

            progress = tqdm(
                total=len(texts), unit="chunk", desc="embed", file=sys.stderr, leave=False
            )
        except ImportError:
            progress = None
    parts = []
    try:
        for start in range(0, len(texts), PROGRESS_BATCH):
            part = texts[start : start + PROGRESS_BATCH]
            parts.append(embedder.embed(part))
            if progress is not None:
                progress.update(len(part))
    finally:
        if progress is not None:
            progress.close()
    return np.concatenate(parts)


def embed_cached(
    embedder: Embedder,
    texts: list[str],
    *,
    cache: VectorSource | None,
    report: Report = _quiet,
    bar: bool = False,
) -> tuple[np.ndarray, int]:
    """Vectors for every text, embedding only those the cache lacks.

    Returns the matrix and how many of the texts were embedded now (a text that
    appears twice is embedded once but counted twice).
    """
    out = np.empty((len(texts), embedder.dim), dtype=np.float32)
    key = cache_key(
        embedder.model_hash, arithmetic(embedder.precision, device_of(embedder)), embedder.batching
    )
    found = cache.get_many(key, texts, embedder.dim) if cache else [None] * len(texts)
    todo: dict[str, list[int]] = {}
    for i, (text, vec) in enumerate(zip(texts, found, strict=True)):
        if vec is None:
            todo.setdefault(text, []).append(i)
        else:
            out[i] = vec
    if todo:
        unique = sorted(todo, key=len)  # length-sorted batches: little padding
        report(f"embed: {len(unique)} texts with {embedder.name}")
        vectors = _embed_in_slices(embedder, unique, bar)
        for text, vec in zip(unique, vectors, strict=True):
            out[todo[text]] = vec
        if cache:
            cache.put_many(key, unique, vectors)
    return out, sum(len(positions) for positions in todo.values())


def run_build(
    spec: BuildSpec,
    *,
    report: Report = _quiet,
    warn: Report = _quiet,
    dry_run: bool = False,
    use_cache: bool = True,
    embedder: Embedder | None = None,
    bar: bool = False,
) -> BuildSummary:
    """Discover, load and chunk the spec's sources, embed them (through the cache), write the
    file atomically and verify it. ``dry_run`` stops before embedding."""
    t0 = time.perf_counter()
    summary = BuildSummary(output=spec.output, dry_run=dry_run)
    out = spec.output
    if out.exists() and out.is_dir():
        raise BuildError(f"output {out} is a directory")
    if not dry_run:
        make_folder(out.parent)
    embedder = embedder or resolve(spec.model, model_path=spec.model_path)
    summary.model = embedder.name
    max_tokens = window(spec, embedder)
    spans = _load_and_chunk(spec, embedder, max_tokens, summary, report, warn)
    if dry_run:
        summary.seconds = time.perf_counter() - t0
        return summary
    stage = time.perf_counter()
    cache = EmbeddingCache(cache_dir() / "embeddings.sqlite") if use_cache else None
    try:
        texts = embedded_texts(spans)
        vectors, embedded, extra_spaces = embed_all(spec, embedder, texts, cache, report, bar)
    finally:
        if cache:
            cache.close()
    summary.embedded = embedded
    summary.cached = len(spans) - embedded
    summary.timings["embed"] = time.perf_counter() - stage
    stage = time.perf_counter()
    result = write_spans(
        spec, out, embedder, spans, vectors, extra_spaces, max_tokens, summary.files, report
    )
    summary.timings["write+verify"] = time.perf_counter() - stage
    report(f"write: {out} ({result.size} bytes), verified")
    summary.size = result.size
    summary.file_hash = result.file_hash
    summary.content_hash = result.content_hash
    summary.seconds = time.perf_counter() - t0
    return summary


def window(spec: BuildSpec, embedder: Embedder) -> int:
    """The chunk size limit in model tokens, checked against the model's window."""
    max_tokens = spec.max_tokens if spec.max_tokens is not None else embedder.max_tokens
    if max_tokens < 8:
        raise BuildError(f"max_tokens must be at least 8, got {max_tokens}")
    if not 0 <= spec.overlap_tokens < max_tokens // 2:
        raise BuildError(
            f"overlap_tokens must be in [0, {max_tokens // 2}), got {spec.overlap_tokens}"
        )
    if max_tokens > embedder.max_tokens:
        raise BuildError(
            f"max_tokens {max_tokens} exceeds the window of {embedder.name} "
            f"({embedder.max_tokens} tokens): longer chunks would be truncated"
        )
    return max_tokens


def _load_and_chunk(
    spec: BuildSpec,
    embedder: Embedder,
    max_tokens: int,
    summary: BuildSummary,
    report: Report,
    warn: Report,
) -> list[ChunkSpan]:
    stage = time.perf_counter()
    files, skipped = discover(spec.sources, spec.base)
    for path, reason in skipped:
        warn(f"skipped {path}: {reason}")
    summary.skipped = [(str(p), r) for p, r in skipped]
    report(f"discover: {len(files)} files")
    summary.timings["discover"] = time.perf_counter() - stage
    stage = time.perf_counter()
    loaded_files = load_files(files, summary, warn, spec.fields)
    docs = [doc for _, loaded in loaded_files for doc in loaded]
    docs.sort(key=canonical_order)
    spans = [
        span
        for group in chunk_documents(
            docs, embedder.count_tokens, max_tokens=max_tokens, overlap_tokens=spec.overlap_tokens
        )
        for span in group
    ]
    summary.chunks = len(spans)
    summary.timings["load+chunk"] = time.perf_counter() - stage
    report(f"chunk: {summary.documents} documents, {len(spans)} chunks (<= {max_tokens} tokens)")
    if not spans:
        raise BuildError(
            f"nothing usable to build: {len(files)} supported files, {len(summary.skipped)} "
            "skipped, 0 chunks"
        )
    return spans


def canonical_order(doc: Document) -> bytes:
    """Documents are stored by source_uri (as UTF-8 bytes), in a file as in every shard of a
    collection: ties between equal scores then break the same way in both (by source, then
    by position in the source)."""
    return doc.source_uri.encode("utf-8")


def load_files(
    files: list[Found],
    summary: BuildSummary | None,
    warn: Report,
    rules: FieldRules | None = None,
) -> list[tuple[Found, list[Document]]]:
    """Each readable file's documents, their metadata as the spec's rules leave it
    (``build/fields.py``); a file that cannot be read is reported and skipped."""
    out = []
    rules = rules or FieldRules()
    for found in files:
        try:
            docs = load(found.path, found.source_uri)
            for doc in docs:
                doc.metadata = rules.apply(doc)
        except (UrnaError, ValueError, OSError) as exc:
            reason = str(exc) or type(exc).__name__
        except Exception as exc:  # a parser library's own error on a malformed file
            reason = f"unreadable {found.kind} ({type(exc).__name__}: {exc})"
        else:
            out.append((found, docs))
            if summary is not None:
                summary.files += 1
                summary.documents += len(docs)
            continue
        warn(f"skipped {found.path}: {reason}")
        if summary is not None:
            summary.skipped.append((str(found.path), reason))
    return out


class VectorSource(Protocol):
    """Where known vectors come from: the embedding cache, or a collection's previous shards."""

    def get_many(
        self, model_hash: str, texts: Sequence[str], dim: int
    ) -> list[np.ndarray | None]: ...

    def put_many(self, model_hash: str, texts: Sequence[str], vectors: np.ndarray) -> None: ...


def embed_all(
    spec: BuildSpec,
    embedder: Embedder,
    texts: list[str],
    cache: VectorSource | None,
    report: Report,
    bar: bool,
) -> tuple[np.ndarray, int, list[dict[str, object]]]:
    """The chunks' vectors, how many were embedded now, and one band per extra space."""
    vectors, embedded = embed_cached(embedder, texts, cache=cache, report=report, bar=bar)
    extra_spaces: list[dict[str, object]] = []
    for name, model in spec.spaces:
        space_embedder = resolve(model)
        report(f"space {name}: {space_embedder.name}")
        band, _ = embed_cached(space_embedder, texts, cache=cache, report=report, bar=bar)
        extra_spaces.append(
            {
                "name": name,
                "model": space_embedder.name,
                "model_hash": space_embedder.model_hash,
                "embeddings": band,
            }
        )
    return vectors, embedded, extra_spaces


def write_spans(
    spec: BuildSpec,
    out: Path,
    embedder: Embedder,
    spans: list[ChunkSpan],
    vectors: np.ndarray,
    extra_spaces: list[dict[str, object]],
    max_tokens: int,
    files: int,
    report: Report,
) -> BuildResult:
    """Write chunks and their vectors as one .urna file at ``out``, as the spec says."""
    root = Path(os.path.relpath(spec.base.resolve(), out.resolve().parent)).as_posix()
    provenance = {"builder": f"urna {__version__}", "files": files, "source_root": root}
    chunks = [
        {
            "text": s.text,
            "source_uri": s.source_uri,
            "byte_start": s.byte_start,
            "byte_end": s.byte_end,
            "section_path": s.section_path,
            "page": s.page,
            "source_ordinal": s.source_ordinal,
            "metadata": s.metadata,
        }
        for s in spans
    ]
    meta = dict(spec.metadata)
    dtype, bm25, ann = resolved(spec)
    report(
        f"index: preset {spec.preset}, {dtype}"
        + (", HNSW + graph" if ann else "")
        + (", BM25" if bm25 else "")
    )
    return build(
        out,
        chunks,
        embeddings=vectors,
        model=embedder.name,
        model_hash=embedder.model_hash,
        chunker_version=chunker_version(max_tokens, spec.overlap_tokens),
        dtype=dtype,  # type: ignore[arg-type]
        compression="zstd" if spec.compress else None,
        provenance=provenance,
        title=meta.pop("title", None),
        description=meta.pop("description", None),
        extra_manifest=meta,
        bm25=bm25,
        hnsw=ann,
        graph=ann,
        rerank_copy=spec.rerank_copy,
        spaces=extra_spaces,
        embed_context=CONTEXT_RECIPE,
        embed_precision=embedder.precision,
        embed_device=device_of(embedder),
        embed_batching=embedder.batching or None,
    )
