"""Identities: chunk_id, content_hash and citation ids, as docs/format.md defines them."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable

CHUNK_ID_DOMAIN = b"urna:chunk_id:v1\n"
CONTENT_HASH_ORDER = (
    "chunk_ids",
    "chunks_canonical",
    "chunks_original_spans",
    "embeddings",
    "provenance",
    "search_contract",
)
CITATION_SCHEME = "urna://"

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_SPAN = struct.Struct("<QQ")


def chunk_id(
    text: str, source_uri: str, byte_start: int, byte_end: int, chunker_version: str
) -> str:
    """``sha256:`` + hex SHA-256 over the domain tag, text, source, span and chunker version."""
    return chunk_id_of(
        text.encode("utf-8"),
        source_uri.encode("utf-8"),
        byte_start,
        byte_end,
        chunker_tail(chunker_version),
    )


def chunker_tail(chunker_version: str) -> bytes:
    """The last field of a chunk_id message, the same for every chunk of a build."""
    raw = chunker_version.encode("utf-8")
    return _U32.pack(len(raw)) + raw


def chunk_id_of(text: bytes, source_uri: bytes, byte_start: int, byte_end: int, tail: bytes) -> str:
    """chunk_id from already-encoded parts (the build's hot path: one hash call per chunk)."""
    message = b"".join(
        (
            CHUNK_ID_DOMAIN,
            _U32.pack(len(text)),
            text,
            _U32.pack(len(source_uri)),
            source_uri,
            _SPAN.pack(byte_start, byte_end),
            tail,
        )
    )
    return "sha256:" + hashlib.sha256(message).hexdigest()


def content_hash(sections: Iterable[tuple[str, bytes | memoryview]]) -> str:
    """Hash the decoded canonical payloads, given as (name, bytes) in any order."""
    by_name = dict(sections)
    h = hashlib.sha256()
    for name in CONTENT_HASH_ORDER:
        payload = by_name[name]
        raw = name.encode("ascii")
        h.update(_U32.pack(len(raw)))
        h.update(raw)
        h.update(_U64.pack(len(payload)))
        h.update(payload)
    return "sha256:" + h.hexdigest()


def citation_id(content: str, chunk: str) -> str:
    return f"{CITATION_SCHEME}{content}/{chunk}"
