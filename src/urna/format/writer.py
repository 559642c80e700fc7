"""Write a .urna v1 container: header, section table, manifest, aligned payloads, footer.

The writer is given finished section payloads; it knows nothing of what they
mean. The same inputs always give the same bytes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from urna.format import manifest as manifest_json
from urna.format.atomic import atomic_writer
from urna.format.layout import (
    CHECKSUM_RANGE_1,
    CHECKSUM_RANGE_2,
    ENTRY,
    ENTRY_SIZE,
    FOOTER,
    FOOTER_SIZE,
    HEADER,
    HEADER_SIZE,
    MAGIC,
    VERSION_MAJOR,
    VERSION_MINOR,
    Encoding,
    align_up,
)


@dataclass(frozen=True)
class SectionPayload:
    """One section as stored: its id, its encoding and the stored bytes."""

    section_id: int
    encoding: Encoding
    data: bytes


def _header(
    *, dim: int, n_chunks: int, n_embeddings: int, file_size: int, count: int, manifest_size: int
) -> bytes:
    unsigned = HEADER.pack(
        MAGIC,
        VERSION_MAJOR,
        VERSION_MINOR,
        0,  # flags
        dim,
        n_chunks,
        n_embeddings,
        file_size,
        HEADER_SIZE,  # the section table follows the header
        count,
        HEADER_SIZE + ENTRY_SIZE * count,  # the manifest follows the table
        manifest_size,
        b"\0" * 8,
        b"\0" * 48,
    )
    checksum = header_checksum(unsigned)
    return unsigned[:72] + checksum + unsigned[80:]


def header_checksum(header: bytes | memoryview) -> bytes:
    a, b = CHECKSUM_RANGE_1, CHECKSUM_RANGE_2
    h = hashlib.sha256(header[a[0] : a[1]])
    h.update(header[b[0] : b[1]])
    return h.digest()[:8]


def write_container(
    path: str | os.PathLike[str],
    manifest: dict[str, Any],
    sections: Sequence[SectionPayload],
    *,
    dim: int,
    n_chunks: int,
    n_embeddings: int,
) -> int:
    """Write the container atomically to ``path`` and return its size in bytes."""
    with atomic_writer(path) as handle:
        return write_stream(
            handle, manifest, sections, dim=dim, n_chunks=n_chunks, n_embeddings=n_embeddings
        )


def write_stream(
    handle: BinaryIO,
    manifest: dict[str, Any],
    sections: Sequence[SectionPayload],
    *,
    dim: int,
    n_chunks: int,
    n_embeddings: int,
) -> int:
    ordered = sorted(sections, key=lambda s: s.section_id)
    ids = [s.section_id for s in ordered]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate section ids: {ids}")
    manifest_bytes = manifest_json.dumps(manifest_json.ordered(manifest))
    count = len(ordered)
    pos = HEADER_SIZE + ENTRY_SIZE * count + len(manifest_bytes)
    offsets = []
    for section in ordered:
        pos = align_up(pos)
        offsets.append(pos)
        pos += len(section.data)
    file_size = pos + FOOTER_SIZE

    table = b"".join(
        ENTRY.pack(
            s.section_id, int(s.encoding), off, len(s.data), hashlib.sha256(s.data).digest()[:8]
        )
        for s, off in zip(ordered, offsets, strict=True)
    )
    header = _header(
        dim=dim,
        n_chunks=n_chunks,
        n_embeddings=n_embeddings,
        file_size=file_size,
        count=count,
        manifest_size=len(manifest_bytes),
    )
    digest = hashlib.sha256()

    def emit(data: bytes) -> None:
        digest.update(data)
        handle.write(data)

    emit(header)
    emit(table)
    emit(manifest_bytes)
    written = HEADER_SIZE + len(table) + len(manifest_bytes)
    for section, off in zip(ordered, offsets, strict=True):
        emit(b"\0" * (off - written))
        emit(section.data)
        written = off + len(section.data)
    handle.write(FOOTER.pack(FOOTER_SIZE, digest.digest()))
    return file_size
