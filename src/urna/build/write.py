"""``urna.build``: validate chunks and vectors, normalize, and write a .urna file."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import zstandard

from urna.build.columns import ChunkInput, Columns, collect, unit_matrix
from urna.embed.batching import RECIPES as BATCHING_RECIPES
from urna.embed.device import GPUS
from urna.embed.precision import RECORDED_PRECISIONS
from urna.errors import BuildError
from urna.format import embeddings as emb
from urna.format import manifest as manifest_rules
from urna.format import sections as payloads
from urna.format.fields import encode_fields, records_of
from urna.format.fusion import FusionParams
from urna.format.identity import citation_id, content_hash
from urna.format.layout import ENCODING_OF_DTYPE, Encoding, SectionId, section_name
from urna.format.reader import Container
from urna.format.spaces import MAX_SPACES, Space, encode_space_table
from urna.format.writer import SectionPayload, write_container
from urna.index.bm25 import CONTEXT_DIVISOR
from urna.index.bm25_build import build_payload as build_bm25
from urna.index.bm25_build import total_length
from urna.index.graph import TOP_M as GRAPH_TOP_M
from urna.index.graph import build_payload as build_graph
from urna.index.hnsw import HNSWIndex
from urna.index.hnsw import build_payload as build_hnsw
from urna.index.mixed import FIELD
from urna.index.tokenize import tokenizer_name
from urna.ingest.context import RECIPES as CONTEXT_RECIPES
from urna.ingest.context import bm25_texts

Dtype = Literal["float32", "float16", "int8"]
DTYPES: tuple[str, ...] = get_args(Dtype)
ZSTD_LEVEL = 9
ZSTD_SECTIONS = (
    SectionId.CHUNK_IDS,
    SectionId.CHUNKS_CANONICAL,
    SectionId.CHUNKS_ORIGINAL_SPANS,
    SectionId.PROVENANCE,
    SectionId.SEARCH_CONTRACT,
    SectionId.CHUNK_META,
    SectionId.CHUNK_FIELDS,
)


@dataclass(frozen=True)
class BuildResult:
    path: Path
    n_chunks: int
    size: int
    file_hash: str
    content_hash: str
    chunk_ids: list[str]
    bm25_total_length: int | None = None  # the sum of the BM25 index's document lengths

    def citation(self, i: int) -> str:
        return citation_id(self.content_hash, self.chunk_ids[i])


def build(
    path: str | os.PathLike[str],
    chunks: Iterable[ChunkInput | Mapping[str, Any]],
    *,
    model: str,
    model_hash: str,
    chunker_version: str,
    dim: int | None = None,
    embeddings: Any = None,
    dtype: Dtype = "float32",
    compression: Literal["zstd"] | None = None,
    provenance: Mapping[str, Any] | None = None,
    title: str | None = None,
    description: str | None = None,
    created: str | None = None,
    extra_manifest: Mapping[str, Any] | None = None,
    bm25: bool = False,
    language: str = "en",
    hnsw: bool = False,
    graph: bool = False,
    rerank_copy: bool = False,
    spaces: Sequence[Mapping[str, Any]] = (),
    fusion: FusionParams | None = None,
    embed_context: str | None = None,
    embed_precision: str | None = None,
    embed_batching: str | None = None,
    embed_device: str = "cpu",
) -> BuildResult:
    """Write ``chunks`` to a new .urna file at ``path``, atomically.

    Vectors come per chunk (``embedding``) or as one ``embeddings`` matrix; they
    are checked (dimension, finite, non-zero) and L2-normalized. The same input
    gives the same bytes: nothing time- or machine-dependent is written unless
    ``created`` is given. ``bm25=True`` adds the BM25 index (section 0x08) over
    each chunk's text and section path, and records ``fusion`` (default: calibrated,
    C = 0.5 x the query's idf sum, RRF k = 60) in the manifest; ``hnsw=True`` an HNSW index (0x07);
    ``graph=True`` (with hnsw) the chunk graph (0x0C); ``rerank_copy=True`` a
    float32 copy of quantized embeddings used to rerank (0x09). ``spaces`` adds
    named embedding spaces, each ``{"name", "model", "model_hash", "embeddings"}``
    with one row per chunk (0x15 and 0x20 + i). ``embed_context`` records the recipe that
    made the embedded texts (``urna.ingest.context``) when the vectors came from one, and
    ``embed_precision`` the arithmetic that made them (float32 or bfloat16), and
    ``embed_batching`` how texts were padded into batches (``urna.embed.batching``), and
    ``embed_device`` where a GPU made them (cuda or mps; the CPU is not recorded).
    """
    items = list(chunks)
    if not items:
        raise BuildError("no chunks to write: a .urna file holds at least one")
    _check_options(model, model_hash, chunker_version, dtype, compression, dim, (hnsw, graph))
    cols = collect(items, chunker_version)
    n = len(cols)
    matrix = unit_matrix(cols.rows, embeddings, n, dim)
    dim = int(matrix.shape[1])
    manifest = _manifest(
        model=model,
        model_hash=model_hash,
        chunker_version=chunker_version,
        dim=dim,
        n=n,
        dtype=dtype,
        indexes=(bm25, hnsw, graph),
        created=created,
        title=title,
        description=description,
        fusion=(fusion or FusionParams.for_build()) if bm25 else None,
        embed_context=embed_context,
        embed_precision=embed_precision,
        embed_batching=embed_batching,
        embed_device=embed_device,
        extra=extra_manifest or {},
    )
    decoded = {
        SectionId.CHUNK_IDS: payloads.encode_strings([c.encode("ascii") for c in cols.ids]),
        SectionId.CHUNKS_CANONICAL: payloads.encode_strings(cols.texts),
        SectionId.CHUNKS_ORIGINAL_SPANS: payloads.encode_spans(cols.uris, cols.starts, cols.ends),
        SectionId.EMBEDDINGS: emb.encode(matrix, ENCODING_OF_DTYPE[dtype]),
        SectionId.PROVENANCE: payloads.encode_json(dict(provenance or {})),
        SectionId.SEARCH_CONTRACT: payloads.encode_json(manifest_rules.search_contract(manifest)),
    }
    stored: dict[int, bytes] = {int(sid): data for sid, data in decoded.items()}
    stored.update(_index_sections(cols, matrix, (bm25, hnsw, graph), embed_context, language))
    stored.update(_space_sections(spaces, n))
    if rerank_copy and dtype != "float32":
        stored[SectionId.EMBEDDINGS_FP] = emb.encode(matrix, Encoding.RAW)
    stored.update(_chunk_sections(cols))
    sections = _encode(stored, dtype, compression)
    size = write_container(path, manifest, sections, dim=dim, n_chunks=n, n_embeddings=n)
    with Container(path) as written:  # what was written must open with every check
        file_hash = written.file_hash
    return BuildResult(
        path=Path(path),
        n_chunks=n,
        size=size,
        file_hash=file_hash,
        content_hash=content_hash((section_name(sid), data) for sid, data in decoded.items()),
        chunk_ids=cols.ids,
        bm25_total_length=_bm25_total(stored, n),
    )


def _bm25_total(stored: dict[int, bytes], n: int) -> int | None:
    payload = stored.get(SectionId.BM25_INDEX)
    return None if payload is None else total_length(payload, n)


def _chunk_sections(cols: Columns) -> dict[int, bytes]:
    """0x10 chunk_meta and 0x11 chunk_fields, when any chunk has something to keep there."""
    out: dict[int, bytes] = {}
    if cols.has_meta:
        out[SectionId.CHUNK_META] = payloads.encode_chunk_meta(
            cols.section_paths, cols.pages, cols.source_ordinals
        )
    if any(cols.fields):
        out[SectionId.CHUNK_FIELDS] = encode_fields(*records_of(cols.fields))
    return out


def _check_options(
    model: Any,
    model_hash: Any,
    chunker_version: Any,
    dtype: Any,
    compression: Any,
    dim: Any,
    ann: tuple[bool, bool],
) -> None:
    if ann[1] and not ann[0]:
        raise BuildError("the chunk graph takes its semantic edges from HNSW: set hnsw=True too")
    for name, value in (("model", model), ("chunker_version", chunker_version)):
        if not isinstance(value, str) or not value:
            raise BuildError(f"{name} must be a non-empty string, got {value!r}")
    if not isinstance(model_hash, str) or not manifest_rules.HASH_RE.fullmatch(model_hash):
        raise BuildError(f"model_hash must be sha256:<64 lowercase hex>, got {model_hash!r}")
    if dtype not in DTYPES:
        raise BuildError(f"dtype must be float32, float16 or int8, got {dtype!r}")
    if compression not in (None, "zstd"):
        raise BuildError(f"compression must be None or 'zstd', got {compression!r}")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0):
        raise BuildError(f"dim must be a positive integer, got {dim!r}")


def _manifest(
    *,
    model: str,
    model_hash: str,
    chunker_version: str,
    dim: int,
    n: int,
    dtype: str,
    indexes: tuple[bool, bool, bool],
    created: str | None,
    title: str | None,
    description: str | None,
    fusion: FusionParams | None,
    embed_context: str | None,
    embed_precision: str | None,
    embed_batching: str | None,
    embed_device: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    bm25, hnsw, graph = indexes
    manifest: dict[str, Any] = {
        "format_version": 1,
        "schema_version": 1,
        "embedding_model": model,
        "embedding_dim": dim,
        "n_chunks": n,
        "dtype": dtype,
        "metric": "ip",
        "score_type": "cosine",
        "normalize": "l2",
        "index_type": ("hybrid" if bm25 else "hnsw") if hnsw else "exact",
        "rerank_policy": "exact" if hnsw else "none",
        "model_hash": model_hash,
        "chunker_version": chunker_version,
        "capabilities": {
            "supports_exact": True,
            "supports_ann": bool(hnsw),
            "supports_bm25": bool(bm25),
            "supports_citations": True,
            "supports_reproducible_build": created in (None, manifest_rules.REPRODUCIBLE_CREATED),
        },
        "title": title,
        "description": description,
        "created": created,
        "capabilities_ext": {"graph_present": True} if graph else None,
    }
    if fusion is not None:
        # The fusion `urna eval` measured best, recorded with the file; search reads it back.
        manifest["fusion"] = fusion.to_manifest()
    if embed_context is not None:
        if embed_context not in CONTEXT_RECIPES:
            raise BuildError(
                f"embed_context must be one of {', '.join(CONTEXT_RECIPES)}, got {embed_context!r}"
            )
        manifest["embed_context"] = embed_context
    if embed_precision is not None:
        if embed_precision not in RECORDED_PRECISIONS:
            raise BuildError(
                f"embed_precision must be one of {', '.join(RECORDED_PRECISIONS)}, "
                f"got {embed_precision!r}"
            )
        manifest["embed_precision"] = embed_precision
    if embed_batching is not None:
        if embed_batching not in BATCHING_RECIPES:
            raise BuildError(
                f"embed_batching must be one of {', '.join(BATCHING_RECIPES)}, "
                f"got {embed_batching!r}"
            )
        manifest["embed_batching"] = embed_batching
    if embed_device != "cpu":
        if embed_device not in GPUS:
            raise BuildError(f"embed_device must be cpu, {' or '.join(GPUS)}, got {embed_device!r}")
        manifest["embed_device"] = embed_device
    for key, value in extra.items():
        if key in manifest:
            raise BuildError(f"extra manifest key {key!r} collides with a standard key")
        manifest[key] = value
    manifest = manifest_rules.ordered(manifest)
    try:
        manifest_rules.validate(manifest)
        if fusion is not None:
            FusionParams.from_manifest(manifest)
    except Exception as exc:  # a FormatError here means the caller's values break a rule
        raise BuildError(str(exc)) from None
    return manifest


def bm25_documents(cols: Columns, context: str | None) -> list[str]:
    """What BM25 indexes per chunk (``ingest.context.bm25_texts``)."""
    placed = [
        ChunkInput(
            t.decode("utf-8"),
            u.decode("utf-8"),
            0,
            0,
            section_path=p.decode("utf-8"),
            source_ordinal=o,
        )
        for t, u, p, o in zip(
            cols.texts, cols.uris, cols.section_paths, cols.source_ordinals, strict=True
        )
    ]
    return bm25_texts(placed, context)


def _index_sections(
    cols: Columns,
    matrix: np.ndarray,
    indexes: tuple[bool, bool, bool],
    context: str | None,
    language: str = "en",
) -> dict[int, bytes]:
    bm25, hnsw, graph = indexes
    out: dict[int, bytes] = {}
    if bm25:
        out[SectionId.BM25_INDEX] = build_bm25(
            bm25_documents(cols, context),
            sources=cols.uris,
            divisor=CONTEXT_DIVISOR,
            tokenizer=tokenizer_name(language),
            languages=[f.get(FIELD) for f in cols.fields] if language == "auto" else None,
        )
    if hnsw:
        ann = build_hnsw(matrix)
        out[SectionId.HNSW_INDEX] = ann
        if graph:
            n, dim = matrix.shape
            semantic = HNSWIndex(memoryview(ann), n, dim).neighbours(matrix, GRAPH_TOP_M)
            out[SectionId.GRAPH_ADJACENCY] = build_graph(
                [u.decode("utf-8") for u in cols.uris], semantic
            )
    return out


def _space_sections(spaces: Sequence[Mapping[str, Any]], n: int) -> dict[int, bytes]:
    if not spaces:
        return {}
    if len(spaces) > MAX_SPACES:
        raise BuildError(f"at most {MAX_SPACES} named spaces, got {len(spaces)}")
    out: dict[int, bytes] = {}
    table: list[Space] = []
    for i, space in enumerate(spaces, 1):
        name = space.get("name")
        if not isinstance(name, str) or not name or name in {t.name for t in table}:
            raise BuildError(f"space {i} needs a unique non-empty name, got {name!r}")
        space_hash = space.get("model_hash")
        if not isinstance(space_hash, str) or not manifest_rules.HASH_RE.fullmatch(space_hash):
            raise BuildError(f"space {name} model_hash must be sha256:<64 lowercase hex>")
        band = unit_matrix([None] * n, space.get("embeddings"), n, None)
        model = str(space.get("model") or name)
        table.append(Space(name, model, space_hash, int(band.shape[1]), 0x20 + i))
        out[0x20 + i] = emb.encode(band, Encoding.RAW)
    out[SectionId.SPACE_TABLE] = encode_space_table(table)
    return out


def _encode(stored: dict[int, bytes], dtype: str, compression: str | None) -> list[SectionPayload]:
    sections = []
    for sid, data in stored.items():
        if sid == SectionId.EMBEDDINGS:
            sections.append(SectionPayload(sid, ENCODING_OF_DTYPE[dtype], data))
        elif compression == "zstd" and sid in ZSTD_SECTIONS:  # indexes are read from the map
            packed = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=False).compress(data)
            sections.append(SectionPayload(sid, Encoding.ZSTD, packed))
        else:
            sections.append(SectionPayload(sid, Encoding.RAW, data))
    return sections
