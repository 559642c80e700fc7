"""Open checks 8 and 10 to 16 of docs/format.md: what the manifest and the section payloads must
satisfy once the header and the section table (checks 1 to 7) are known to be sound.

Each function takes what it checks and returns what it decoded; ``reader.Container`` calls
them in order. Check 9 (the footer hash) runs on the hashing thread, in the reader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from urna.errors import FormatError, IntegrityError
from urna.format import embeddings as emb
from urna.format import manifest as manifest_rules
from urna.format import sections as payloads
from urna.format.layout import (
    DTYPE_OF_ENCODING,
    FOOTER,
    FOOTER_SIZE,
    REQUIRED_SECTIONS,
    SPACE_BAND_FIRST,
    SPACE_BAND_LAST,
    Encoding,
    SectionId,
    section_label,
    section_name,
)
from urna.format.spaces import Space, decode_space_table

Payload = Callable[[int], memoryview]


class HeaderFields(Protocol):
    @property
    def embedding_dim(self) -> int: ...

    @property
    def n_chunks(self) -> int: ...

    @property
    def n_embeddings(self) -> int: ...

    @property
    def manifest_offset(self) -> int: ...

    @property
    def manifest_size(self) -> int: ...


class EntryFields(Protocol):
    @property
    def encoding(self) -> Encoding: ...

    @property
    def offset(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def label(self) -> str: ...


def fail(check: int, section: str, message: str) -> FormatError:
    return FormatError(message, check=check, section=section)


def mismatch(check: int, section: str, message: str) -> IntegrityError:
    return IntegrityError(message, check=check, section=section)


def check_manifest(
    buf: memoryview, h: HeaderFields, table_end: int, body_end: int
) -> dict[str, Any]:
    """8: the manifest sits right after the table and is valid; 9: the footer's size field;
    10: the manifest agrees with the header."""
    if h.manifest_offset != table_end:
        raise fail(8, "manifest", f"manifest offset is {h.manifest_offset}, expected {table_end}")
    if h.manifest_offset + h.manifest_size > body_end:
        raise fail(8, "manifest", f"manifest of {h.manifest_size} bytes runs past the payloads")
    raw = bytes(buf[h.manifest_offset : h.manifest_offset + h.manifest_size])
    try:
        manifest = manifest_rules.loads_object(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise fail(8, "manifest", f"manifest is not valid JSON: {exc}") from None
    manifest_rules.validate(manifest)
    footer_size, _ = FOOTER.unpack_from(buf, body_end)
    if footer_size != FOOTER_SIZE:
        raise fail(9, "footer", f"footer size field is {footer_size}, expected 40")
    for key, value in (("embedding_dim", h.embedding_dim), ("n_chunks", h.n_chunks)):
        if manifest[key] != value:
            raise fail(
                10, "manifest", f"manifest {key} is {manifest[key]} but the header says {value}"
            )
    if h.n_embeddings != h.n_chunks:
        raise fail(10, "header", f"n_embeddings is {h.n_embeddings} but n_chunks is {h.n_chunks}")
    return manifest


def check_embeddings(
    buf: memoryview,
    entries: Mapping[int, EntryFields],
    manifest: Mapping[str, Any],
    n: int,
    dim: int,
) -> emb.Matrix:
    """11: every required section is present; 12: the embeddings' size and dtype."""
    for sid in REQUIRED_SECTIONS:
        if sid not in entries:
            raise fail(
                11,
                f"section {section_label(sid)}",
                f"missing required section: {section_name(sid)}",
            )
    entry = entries[SectionId.EMBEDDINGS]
    where = f"section {entry.label}"
    if DTYPE_OF_ENCODING.get(entry.encoding) != manifest["dtype"]:
        raise fail(
            12,
            where,
            f"manifest dtype {manifest['dtype']} does not match the embeddings encoding "
            f"{entry.encoding.label}",
        )
    expected = emb.expected_size(entry.encoding, n, dim)
    if entry.size != expected:
        raise fail(12, where, f"embedding size mismatch: expected {expected}, got {entry.size}")
    stored = buf[entry.offset : entry.offset + entry.size]
    if entry.encoding == Encoding.INT8:
        version, kind = emb.read_int8_header(stored)
        if version != emb.INT8_VERSION or kind != emb.INT8_SCALE_KIND:
            raise fail(
                12, where, f"int8 embeddings version {version} scale_kind {kind}, expected 1 and 0"
            )
    return emb.view(stored, entry.encoding, n, dim)


def check_spaces(payload: Payload, entries: Mapping[int, Any], n: int) -> list[Space]:
    """13: every band the space table names exists with the right size."""
    if SectionId.SPACE_TABLE in entries:
        return decode_space_table(payload(SectionId.SPACE_TABLE), entries, n)
    if any(SPACE_BAND_FIRST <= sid <= SPACE_BAND_LAST for sid in entries):
        raise fail(
            13,
            "section 0x15 space_table",
            "embedding space bands exist but there is no space table",
        )
    return []


def check_contract(payload: Payload, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """14: the search contract equals the manifest on every contract key."""
    contract = payloads.decode_json(SectionId.SEARCH_CONTRACT, payload(SectionId.SEARCH_CONTRACT))
    for key in manifest_rules.CONTRACT_KEYS:
        if contract.get(key) != manifest[key]:
            raise fail(
                14,
                f"section {section_label(SectionId.SEARCH_CONTRACT)}",
                f"search_contract {key} is {contract.get(key)!r} but the manifest says "
                f"{manifest[key]!r}",
            )
    return contract


@dataclass(frozen=True)
class Canonical:
    """The decoded canonical payloads (and the optional chunk metadata)."""

    chunk_id_rows: Any
    texts: payloads.StringTable
    spans: payloads.Spans
    chunk_meta: payloads.ChunkMeta | None
    provenance: dict[str, Any]


def check_canonical(payload: Payload, entries: Mapping[int, Any], n: int) -> Canonical:
    """15: the canonical payloads decode (versions, counts, no trailing bytes, UTF-8)."""
    return Canonical(
        chunk_id_rows=payloads.decode_chunk_ids(
            SectionId.CHUNK_IDS, payload(SectionId.CHUNK_IDS), n
        ),
        texts=payloads.decode_strings(
            SectionId.CHUNKS_CANONICAL, payload(SectionId.CHUNKS_CANONICAL), n
        ),
        spans=payloads.decode_spans(
            SectionId.CHUNKS_ORIGINAL_SPANS, payload(SectionId.CHUNKS_ORIGINAL_SPANS), n
        ),
        chunk_meta=(
            payloads.decode_chunk_meta(SectionId.CHUNK_META, payload(SectionId.CHUNK_META), n)
            if SectionId.CHUNK_META in entries
            else None
        ),
        provenance=payloads.decode_json(SectionId.PROVENANCE, payload(SectionId.PROVENANCE)),
    )


def check_finite(matrix: emb.Matrix, bands: list[tuple[Space, emb.Matrix]]) -> None:
    """16: no NaN or Inf in the embeddings (for int8: in the scales) nor in any space."""
    row = matrix.first_non_finite()
    if row is not None:
        where = f"section {section_label(SectionId.EMBEDDINGS)}"
        raise fail(16, where, f"NaN or Inf detected in embeddings (row {row})")
    for space, band in bands:
        if band.first_non_finite() is not None:
            raise fail(
                16,
                f"section {section_label(space.section)}",
                f"NaN or Inf detected in embeddings of space {space.name}",
            )
