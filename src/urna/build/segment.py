"""The one writer of data files: ``write_segment`` writes every .urna file urna builds from
documents (a single file, a shard, an update's segment, a fold or a merge).

Its input is chunks in source order (the documents stage, ``build/documents.py``, or the
live chunks of earlier files); their vectors come from the vectors stage
(``build/vectors.py``: earlier files, then the cache, then the model); the container is
encoded by ``build/write.py`` (``urna.build``, which also writes files from stored
vectors) and written atomically. A collection's data file gets its source table first, so
a catalog never names a file without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from urna.build.documents import chunker_version
from urna.build.spec import resolved
from urna.build.summary import Report, quiet
from urna.build.target import Target, relative_roots
from urna.build.vectors import Chained, VectorSource, embed_known
from urna.build.write import build
from urna.embed.base import cache_dir
from urna.embed.cache import EmbeddingCache
from urna.embed.device import device_of
from urna.embed.e5 import cosine_floor
from urna.embed.registry import resolve
from urna.format.fusion import FusionParams
from urna.format.sources import SourceRow, write_table
from urna.ingest.chunker import ChunkSpan
from urna.ingest.context import CONTEXT_RECIPE, embedded_texts
from urna.ingest.loaders import EXTRACTORS
from urna.version import __version__


def builder() -> str:
    """Who wrote a file, as its provenance records it."""
    return f"urna {__version__}"


@dataclass(frozen=True)
class Written:
    """A data file just written: what a catalog records of it, and its source table."""

    path: Path
    n_chunks: int
    embedded: int
    size: int
    file_hash: str
    content_hash: str
    bm25_total_length: int | None
    rows: tuple[SourceRow, ...] | None

    @property
    def file(self) -> str:
        return self.path.name


def write_segment(
    target: Target,
    name: str,
    spans: Sequence[ChunkSpan],
    rows: Sequence[SourceRow] | None,
    *,
    earlier: VectorSource | None = None,
    files: int | None = None,
    report: Report = quiet,
) -> Written:
    """Write ``spans`` as the data file ``name`` in the target's folder, with a source
    table of ``rows`` (None: a single file, which has none). ``files`` is how many source
    files it came from (default: those its rows name)."""
    spec, embedder = target.spec, target.embedder
    out = target.path(name)
    texts = embedded_texts(list(spans))
    cache = EmbeddingCache(cache_dir() / "embeddings.sqlite") if target.use_cache else None
    try:
        known = Chained(earlier, cache)
        shown = (target.progress, target.tell)
        vectors, embedded = embed_known(embedder, texts, known, report, *shown)
        spaces: list[dict[str, object]] = []
        for space, model in spec.spaces:
            space_embedder = resolve(model)
            report(f"space {space}: {space_embedder.name}")
            band, _ = embed_known(space_embedder, texts, known, report, *shown)
            spaces.append(
                {
                    "name": space,
                    "model": space_embedder.name,
                    "model_hash": space_embedder.model_hash,
                    "embeddings": band,
                }
            )
    finally:
        if cache is not None:
            cache.close()
    if files is None:
        files = len({r.file for r in rows or ()})
    if rows is not None:
        write_table(out, list(rows))
    roots = relative_roots(spec, out.resolve().parent)
    meta = dict(spec.metadata)
    dtype, bm25, ann = resolved(spec)
    report(
        f"index: preset {spec.preset}, {dtype}"
        + (", HNSW + graph" if ann else "")
        + (", BM25" if bm25 else "")
    )
    result = build(
        out,
        [_chunk_input(s) for s in spans],
        embeddings=vectors,
        model=embedder.name,
        model_hash=embedder.model_hash,
        chunker_version=chunker_version(target.max_tokens, spec.overlap_tokens),
        dtype=dtype,  # type: ignore[arg-type]
        compression="zstd" if spec.compress else None,
        provenance={
            "builder": builder(),
            "extractors": EXTRACTORS,
            "files": files,
            "source_root": roots[0],
            **({"source_roots": roots[1:]} if len(roots) > 1 else {}),
        },
        title=meta.pop("title", None),
        description=meta.pop("description", None),
        extra_manifest=meta,
        bm25=bm25,
        language=spec.lang or "en",
        hnsw=ann,
        graph=ann,
        rerank_copy=spec.rerank_copy,
        spaces=spaces,
        embed_context=CONTEXT_RECIPE,
        fusion=FusionParams.for_build(cosine_floor(embedder.name)),
        embed_precision=embedder.precision,
        embed_device=device_of(embedder),
        embed_batching=embedder.batching or None,
    )
    return Written(
        out,
        result.n_chunks,
        embedded,
        result.size,
        result.file_hash,
        result.content_hash,
        result.bm25_total_length,
        None if rows is None else tuple(rows),
    )


def _chunk_input(s: ChunkSpan) -> dict[str, object]:
    return {
        "text": s.text,
        "source_uri": s.source_uri,
        "byte_start": s.byte_start,
        "byte_end": s.byte_end,
        "section_path": s.section_path,
        "page": s.page,
        "source_ordinal": s.source_ordinal,
        "metadata": s.metadata,
    }
