"""Byte layout of the .urna v1 container: sizes, structs, section ids, encodings.

This module is the single table that mirrors ``docs/format.md``.
"""

from __future__ import annotations

import enum
import struct

MAGIC = b"URNA"
LEGACY_MAGIC = b"NEST"
VERSION_MAJOR = 1
VERSION_MINOR = 0

HEADER_SIZE = 128
ENTRY_SIZE = 32
FOOTER_SIZE = 40
MIN_FILE_SIZE = HEADER_SIZE + FOOTER_SIZE  # 168
ALIGN = 64

# magic, major, minor, flags, dim, n_chunks, n_embeddings, file_size,
# table_offset, table_count, manifest_offset, manifest_size, header checksum
HEADER = struct.Struct("<4sHHIIQQQQQQQ8s48s")
ENTRY = struct.Struct("<IIQQ8s")
FOOTER = struct.Struct("<Q32s")
PREFIX = struct.Struct("<IQ")  # version, count: the 12-byte prefix of a payload
PREFIX_VERSION = 1

CHECKSUM_RANGE_1 = (0, 72)  # header bytes hashed for the header checksum...
CHECKSUM_RANGE_2 = (80, 128)  # ...followed by these (the checksum itself is left out)


class Encoding(enum.IntEnum):
    RAW = 0
    ZSTD = 1
    FLOAT16 = 2
    INT8 = 3
    INTPACK = 4
    ZSTD_DICT = 5
    FRONTCODE = 6
    INT4 = 7
    RABITQ = 8
    FSST = 9
    TXT_STREAMS = 10

    @property
    def label(self) -> str:
        return self.name.lower()


# Encodings of the original format that this implementation neither reads nor writes.
UNSUPPORTED_ENCODINGS = frozenset(
    {
        Encoding.INTPACK,
        Encoding.ZSTD_DICT,
        Encoding.FRONTCODE,
        Encoding.INT4,
        Encoding.RABITQ,
        Encoding.FSST,
        Encoding.TXT_STREAMS,
    }
)

EMBEDDING_ENCODINGS = frozenset({Encoding.RAW, Encoding.FLOAT16, Encoding.INT8})
OTHER_ENCODINGS = frozenset({Encoding.RAW, Encoding.ZSTD})

DTYPE_OF_ENCODING = {
    Encoding.RAW: "float32",
    Encoding.FLOAT16: "float16",
    Encoding.INT8: "int8",
    Encoding.INT4: "int4",
}
ENCODING_OF_DTYPE = {v: k for k, v in DTYPE_OF_ENCODING.items()}


class SectionId(enum.IntEnum):
    CHUNK_IDS = 0x01
    CHUNKS_CANONICAL = 0x02
    CHUNKS_ORIGINAL_SPANS = 0x03
    EMBEDDINGS = 0x04
    PROVENANCE = 0x05
    SEARCH_CONTRACT = 0x06
    HNSW_INDEX = 0x07
    BM25_INDEX = 0x08
    EMBEDDINGS_FP = 0x09
    GRAPH_ADJACENCY = 0x0C
    CHUNK_META = 0x10  # this implementation's own: section path, page, ordinal per chunk
    CHUNK_FIELDS = 0x11  # this implementation's own: each chunk's typed metadata
    SPACE_TABLE = 0x15


SPACE_BAND_FIRST = 0x21  # embeddings of space i live in section 0x20 + i, i = 1..15
SPACE_BAND_LAST = 0x2F

REQUIRED_SECTIONS = (
    SectionId.CHUNK_IDS,
    SectionId.CHUNKS_CANONICAL,
    SectionId.CHUNKS_ORIGINAL_SPANS,
    SectionId.EMBEDDINGS,
    SectionId.PROVENANCE,
    SectionId.SEARCH_CONTRACT,
)


def section_name(section_id: int) -> str:
    """The name of a section id, e.g. ``embeddings`` or ``space_3``."""
    try:
        return SectionId(section_id).name.lower()
    except ValueError:
        if SPACE_BAND_FIRST <= section_id <= SPACE_BAND_LAST:
            return f"space_{section_id - 0x20}"
        return "unknown"


def section_label(section_id: int) -> str:
    """``0x04 embeddings``: how messages and ``urna stats`` name a section."""
    return f"0x{section_id:02X} {section_name(section_id)}"


def is_embedding_section(section_id: int) -> bool:
    return section_id in (SectionId.EMBEDDINGS, SectionId.EMBEDDINGS_FP) or (
        SPACE_BAND_FIRST <= section_id <= SPACE_BAND_LAST
    )


def align_up(offset: int, alignment: int = ALIGN) -> int:
    return -(-offset // alignment) * alignment
