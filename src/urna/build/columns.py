"""The input of a build, checked: chunks (objects or mappings) become columns, and vectors one
matrix of unit rows. Every refusal is a ``BuildError`` naming the chunk and the field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from urna.errors import BuildError
from urna.format.fields import checked_fields
from urna.format.identity import chunk_id_of, chunker_tail

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
    metadata: Mapping[str, Any] | None = None  # typed fields (``format/fields.py``)


@dataclass
class Columns:
    """The chunks of a build, one list per field, in file order."""

    texts: list[bytes] = field(default_factory=list)
    uris: list[bytes] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    rows: list[Any] = field(default_factory=list)  # per-chunk vectors (None where absent)
    section_paths: list[bytes] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    source_ordinals: list[int] = field(default_factory=list)
    fields: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def has_meta(self) -> bool:
        return any(self.section_paths) or any(self.pages) or any(self.source_ordinals)


def collect(items: Sequence[ChunkInput | Mapping[str, Any]], chunker_version: str) -> Columns:
    """Check every chunk and compute its chunk_id; a repeated chunk is refused."""
    cols = Columns()
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
        section_path = _field(chunk, "section_path", i)
        if not isinstance(section_path, str):
            raise BuildError(f"chunk {i} section_path must be a string, got {section_path!r}")
        cols.texts.append(text)
        cols.uris.append(uri)
        cols.starts.append(start)
        cols.ends.append(end)
        cols.ids.append(cid)
        cols.rows.append(_field(chunk, "embedding", i))
        cols.section_paths.append(section_path.encode("utf-8"))
        cols.pages.append(_u32(_field(chunk, "page", i), "page", i))
        cols.source_ordinals.append(_u32(_field(chunk, "source_ordinal", i), "source_ordinal", i))
        cols.fields.append(checked_fields(_field(chunk, "metadata", i), f"chunk {i}"))
    return cols


_OPTIONAL = {
    "embedding": None,
    "section_path": "",
    "page": 0,
    "source_ordinal": 0,
    "metadata": None,
}


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


def unit_matrix(rows: list[Any], embeddings: Any, n: int, dim: int | None) -> np.ndarray:
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
