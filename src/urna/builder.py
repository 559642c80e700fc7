"""``urna.build``: validate chunks and vectors, normalize, and write a .urna file."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import zstandard

from urna.errors import BuildError
from urna.format import embeddings as emb
from urna.format import manifest as manifest_rules
from urna.format import sections as payloads
from urna.format.identity import chunk_id_of, chunker_tail, citation_id, content_hash
from urna.format.layout import ENCODING_OF_DTYPE, Encoding, SectionId, section_name
from urna.format.reader import Container
from urna.format.spaces import MAX_SPACES, Space, encode_space_table
from urna.format.writer import SectionPayload, write_container
from urna.index.bm25 import build_payload as build_bm25
from urna.index.graph import TOP_M as GRAPH_TOP_M
from urna.index.graph import build_payload as build_graph
from urna.index.hnsw import HNSWIndex
from urna.index.hnsw import build_payload as build_hnsw

Dtype = Literal["float32", "float16", "int8"]
ZSTD_LEVEL = 9
ZSTD_SECTIONS = (
    SectionId.CHUNK_IDS,
    SectionId.CHUNKS_CANONICAL,
    SectionId.CHUNKS_ORIGINAL_SPANS,
    SectionId.PROVENANCE,
    SectionId.SEARCH_CONTRACT,
    SectionId.CHUNK_META,
)
U64_MAX = (1 << 64) - 1


@dataclass(frozen=True)
class ChunkInput:
    """One chunk to write: its canonical text, where it came from, and (optionally) its vector."""

    text: str
    source_uri: str
    byte_start: int
    byte_end: int
    embedding: Sequence[float] | np.ndarray | None = None
    section_path: str = ""  # e.g. "Guide / Install / Linux"
    page: int = 0  # 1-based page of a paged source, 0 where none
    source_ordinal: int = 0  # 1-based position of the chunk within its source, 0 if unknown


@dataclass(frozen=True)
class BuildResult:
    path: Path
    n_chunks: int
    size: int
    file_hash: str
    content_hash: str
    chunk_ids: list[str]

    def citation(self, i: int) -> str:
        return citation_id(self.content_hash, self.chunk_ids[i])


_OPTIONAL = {"embedding": None, "section_path": "", "page": 0, "source_ordinal": 0}


def _field(chunk: ChunkInput | Mapping[str, Any], name: str, i: int) -> Any:
    if isinstance(chunk, Mapping):
        if name not in chunk:
            if name in _OPTIONAL:
                return _OPTIONAL[name]
            raise BuildError(f"chunk {i} is missing field {name!r}")
        return chunk[name]
    return getattr(chunk, name)


def _span(value: Any, name: str, i: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise BuildError(f"chunk {i} {name} must be an integer, got {value!r}")
    value = int(value)
    if not 0 <= value <= U64_MAX:
        raise BuildError(f"chunk {i} {name} must be in [0, 2^64), got {value}")
    return value


def _u32(value: Any, name: str, i: int) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | np.integer)
        or not (0 <= value < 1 << 32)
    ):
        raise BuildError(f"chunk {i} {name} must be an integer in [0, 2^32), got {value!r}")
    return int(value)


def _text(value: Any, name: str, i: int) -> str:
    if not isinstance(value, str):
        raise BuildError(f"chunk {i} {name} must be a string, got {type(value).__name__}")
    if not value:
        raise BuildError(f"chunk {i} {name} is empty")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BuildError(f"chunk {i} {name} is not valid Unicode: {exc.reason}") from None
    return value


def _stack_rows(rows: list[Any], width: int | None) -> np.ndarray:
    missing = [i for i, r in enumerate(rows) if r is None]
    if missing:
        raise BuildError(f"chunk {missing[0]} has no embedding")
    width = width if width is not None else len(rows[0])
    m = np.empty((len(rows), width), dtype=np.float64)
    for i, row in enumerate(rows):
        try:
            vec = np.asarray(row, dtype=np.float64)
        except (TypeError, ValueError):
            raise BuildError(f"chunk {i} embedding is not a list of numbers") from None
        if vec.ndim != 1 or len(vec) != width:
            raise BuildError(
                f"chunk {i} embedding dimension mismatch: expected {width}, got {vec.size}"
            )
        m[i] = vec
    return m


def _matrix(rows: list[Any], embeddings: Any, n: int, dim: int | None) -> np.ndarray:
    """The (n, dim) float32 matrix of unit rows, checked block by block (finite, non-zero)."""
    if embeddings is not None:
        if any(r is not None for r in rows):
            raise BuildError("give embeddings either per chunk or as one matrix, not both")
        try:
            m = np.asarray(embeddings)
            if m.dtype.kind not in "fiu":
                m = m.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise BuildError(f"embeddings are not a numeric matrix: {exc}") from None
        if m.ndim != 2 or m.shape[0] != n:
            raise BuildError(f"embeddings must have shape ({n}, dim), got {m.shape}")
    else:
        m = _stack_rows(rows, dim)
    if dim is not None and m.shape[1] != dim:
        raise BuildError(f"embedding dimension mismatch: expected {dim}, got {m.shape[1]}")
    if m.shape[1] == 0:
        raise BuildError("embedding dimension must be > 0")
    out = np.empty(m.shape, dtype=np.float32)
    step = max(1, (1 << 21) // m.shape[1])
    for start in range(0, n, step):
        block = np.asarray(m[start : start + step], dtype=np.float64)
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            raise BuildError(f"chunk {start + int(np.argmin(finite))} embedding holds NaN or Inf")
        # Scale by the largest magnitude first, so squaring cannot overflow.
        peak = np.abs(block).max(axis=1)
        if not peak.all():
            raise BuildError(f"chunk {start + int(np.argmin(peak))} embedding has zero norm")
        block = block / peak[:, None]
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        out[start : start + len(block)] = block / norms[:, None]
    return out


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
    hnsw: bool = False,
    graph: bool = False,
    rerank_copy: bool = False,
    spaces: Sequence[Mapping[str, Any]] = (),
) -> BuildResult:
    """Write ``chunks`` to a new .urna file at ``path``, atomically.

    Vectors come per chunk (``embedding``) or as one ``embeddings`` matrix; they
    are checked (dimension, finite, non-zero) and L2-normalized. The same input
    gives the same bytes: nothing time- or machine-dependent is written unless
    ``created`` is given. ``bm25=True`` adds the BM25 index (section 0x08) over
    each chunk's text and section path; ``hnsw=True`` an HNSW index (0x07);
    ``graph=True`` (with hnsw) the chunk graph (0x0C); ``rerank_copy=True`` a
    float32 copy of quantized embeddings used to rerank (0x09). ``spaces`` adds
    named embedding spaces, each ``{"name", "model", "model_hash", "embeddings"}``
    with one row per chunk (0x15 and 0x20 + i).
    """
    items = list(chunks)
    if not items:
        raise BuildError("no chunks to write: a .urna file holds at least one")
    for name, value in (("model", model), ("chunker_version", chunker_version)):
        if not isinstance(value, str) or not value:
            raise BuildError(f"{name} must be a non-empty string, got {value!r}")
    if not isinstance(model_hash, str) or not manifest_rules.HASH_RE.fullmatch(model_hash):
        raise BuildError(f"model_hash must be sha256:<64 lowercase hex>, got {model_hash!r}")
    if dtype not in ("float32", "float16", "int8"):
        raise BuildError(f"dtype must be float32, float16 or int8, got {dtype!r}")
    if compression not in (None, "zstd"):
        raise BuildError(f"compression must be None or 'zstd', got {compression!r}")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0):
        raise BuildError(f"dim must be a positive integer, got {dim!r}")

    texts: list[bytes] = []
    uris: list[bytes] = []
    starts: list[int] = []
    ends: list[int] = []
    ids: list[str] = []
    rows: list[Any] = []
    meta_paths: list[bytes] = []
    meta_pages: list[int] = []
    meta_ordinals: list[int] = []
    seen: dict[str, int] = {}
    tail = chunker_tail(chunker_version)
    for i, chunk in enumerate(items):
        text = _text(_field(chunk, "text", i), "text", i).encode("utf-8")
        uri = _text(_field(chunk, "source_uri", i), "source_uri", i).encode("utf-8")
        start = _span(_field(chunk, "byte_start", i), "byte_start", i)
        end = _span(_field(chunk, "byte_end", i), "byte_end", i)
        if end < start:
            raise BuildError(f"chunk {i} byte_end {end} is before byte_start {start}")
        cid = chunk_id_of(text, uri, start, end, tail)
        if cid in seen:
            raise BuildError(f"chunk {i} repeats chunk {seen[cid]} (same text, source and span)")
        seen[cid] = i
        texts.append(text)
        uris.append(uri)
        starts.append(start)
        ends.append(end)
        ids.append(cid)
        rows.append(_field(chunk, "embedding", i))
        section_path = _field(chunk, "section_path", i)
        if not isinstance(section_path, str):
            raise BuildError(f"chunk {i} section_path must be a string, got {section_path!r}")
        meta_paths.append(section_path.encode("utf-8"))
        meta_pages.append(_u32(_field(chunk, "page", i), "page", i))
        meta_ordinals.append(_u32(_field(chunk, "source_ordinal", i), "source_ordinal", i))
    n = len(items)
    matrix = _matrix(rows, embeddings, n, dim)
    dim = int(matrix.shape[1])

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
    if bm25:
        # The fusion that `urna eval` measured best, recorded with the file (SEARCH.md).
        manifest["fusion"] = {"default": "calibrated", "text_calibration": 10.0, "rrf_k": 60}
    for key, value in (extra_manifest or {}).items():
        if key in manifest:
            raise BuildError(f"extra manifest key {key!r} collides with a standard key")
        manifest[key] = value
    manifest = manifest_rules.ordered(manifest)
    try:
        manifest_rules.validate(manifest)
    except Exception as exc:  # a FormatError here means the caller's values break a rule
        raise BuildError(str(exc)) from None

    decoded = {
        SectionId.CHUNK_IDS: payloads.encode_strings([c.encode("ascii") for c in ids]),
        SectionId.CHUNKS_CANONICAL: payloads.encode_strings(texts),
        SectionId.CHUNKS_ORIGINAL_SPANS: payloads.encode_spans(uris, starts, ends),
        SectionId.EMBEDDINGS: emb.encode(matrix, ENCODING_OF_DTYPE[dtype]),
        SectionId.PROVENANCE: payloads.encode_json(dict(provenance or {})),
        SectionId.SEARCH_CONTRACT: payloads.encode_json(manifest_rules.search_contract(manifest)),
    }
    stored: dict[int, bytes] = {int(sid): data for sid, data in decoded.items()}
    if bm25:
        documents = [
            (t.decode("utf-8") + ("\n" + p.decode("utf-8") if p else ""))
            for t, p in zip(texts, meta_paths, strict=True)
        ]
        stored[SectionId.BM25_INDEX] = build_bm25(documents)
    if graph and not hnsw:
        raise BuildError("the chunk graph takes its semantic edges from HNSW: set hnsw=True too")
    if hnsw:
        ann = build_hnsw(matrix)
        stored[SectionId.HNSW_INDEX] = ann
        if graph:
            index = HNSWIndex(memoryview(ann), n, dim)
            semantic = index.neighbours(matrix, GRAPH_TOP_M)
            stored[SectionId.GRAPH_ADJACENCY] = build_graph(
                [u.decode("utf-8") for u in uris], semantic
            )
    if spaces:
        table: list[Space] = []
        if len(spaces) > MAX_SPACES:
            raise BuildError(f"at most {MAX_SPACES} named spaces, got {len(spaces)}")
        for i, space in enumerate(spaces, 1):
            space_name = space.get("name")
            if (
                not isinstance(space_name, str)
                or not space_name
                or space_name in {t.name for t in table}
            ):
                raise BuildError(f"space {i} needs a unique non-empty name, got {space_name!r}")
            space_hash = space.get("model_hash")
            if not isinstance(space_hash, str) or not manifest_rules.HASH_RE.fullmatch(space_hash):
                raise BuildError(f"space {space_name} model_hash must be sha256:<64 lowercase hex>")
            band = _matrix([None] * n, space.get("embeddings"), n, None)
            table.append(
                Space(
                    space_name,
                    str(space.get("model") or space_name),
                    space_hash,
                    int(band.shape[1]),
                    0x20 + i,
                )
            )
            stored[0x20 + i] = emb.encode(band, Encoding.RAW)
        stored[SectionId.SPACE_TABLE] = encode_space_table(table)
    if rerank_copy and dtype != "float32":
        stored[SectionId.EMBEDDINGS_FP] = emb.encode(matrix, Encoding.RAW)
    if any(meta_paths) or any(meta_pages) or any(meta_ordinals):
        stored[SectionId.CHUNK_META] = payloads.encode_chunk_meta(
            meta_paths, meta_pages, meta_ordinals
        )
    sections = []
    for sid, data in stored.items():
        if sid == SectionId.EMBEDDINGS:
            sections.append(SectionPayload(sid, ENCODING_OF_DTYPE[dtype], data))
        elif compression == "zstd" and sid in ZSTD_SECTIONS:  # indexes are read from the map
            packed = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=False).compress(data)
            sections.append(SectionPayload(sid, Encoding.ZSTD, packed))
        else:
            sections.append(SectionPayload(sid, Encoding.RAW, data))
    size = write_container(path, manifest, sections, dim=dim, n_chunks=n, n_embeddings=n)
    with Container(path) as written:  # what was written must open with every check
        file_hash = written.file_hash
    return BuildResult(
        path=Path(path),
        n_chunks=n,
        size=size,
        file_hash=file_hash,
        content_hash=content_hash((section_name(sid), data) for sid, data in decoded.items()),
        chunk_ids=ids,
    )
