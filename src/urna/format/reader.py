"""Open a .urna v1 container: memory-map it and run every check of docs/format.md in order.

Two levels of verification:

* ``"full"`` (default): every check, including every section checksum, the
  footer hash over the whole file and a NaN/Inf walk of the embeddings. The
  file hash and the section checksums run on two threads (hashlib releases
  the GIL) while this thread decodes the structure, so a full open costs
  about one ``sha256sum`` of the file.
* ``"trusted"``: every structural check, but no hashing and no NaN walk; for
  a caller that verified the same file before (the server, after start).

Nothing here copies the embedding matrix: it is a view of the memory map.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import zstandard

from urna.errors import FormatError
from urna.format import checks
from urna.format import embeddings as emb
from urna.format.checks import fail, mismatch
from urna.format.fields import decode_fields
from urna.format.identity import content_hash as hash_content
from urna.format.layout import (
    ALIGN,
    EMBEDDING_ENCODINGS,
    ENTRY,
    ENTRY_SIZE,
    FOOTER_SIZE,
    HEADER,
    HEADER_SIZE,
    LEGACY_MAGIC,
    MAGIC,
    MIN_FILE_SIZE,
    OTHER_ENCODINGS,
    REQUIRED_SECTIONS,
    UNSUPPORTED_ENCODINGS,
    VERSION_MAJOR,
    VERSION_MINOR,
    Encoding,
    SectionId,
    is_embedding_section,
    section_label,
    section_name,
)
from urna.format.mapping import map_file
from urna.format.spaces import Space
from urna.format.writer import header_checksum

Verify = Literal["full", "trusted"]
MAX_SECTIONS = 4096
MAX_DECODED_SECTION = 1 << 34  # 16 GiB: refuse zstd payloads claiming more
# A zstd frame may claim at most this many times its stored size (or ZSTD_FLOOR, whichever
# is larger): urna's own sections compress 1-5x, so a frame claiming more is a bomb, refused
# before the decoder allocates what it claims.
ZSTD_RATIO = 256
ZSTD_FLOOR = 64 << 20
PARALLEL_HASH_MIN = 1 << 20  # below this size, hashing on threads costs more than it saves


@dataclass(frozen=True)
class Header:
    magic: bytes
    version_major: int
    version_minor: int
    flags: int
    embedding_dim: int
    n_chunks: int
    n_embeddings: int
    file_size: int
    section_table_offset: int
    section_table_count: int
    manifest_offset: int
    manifest_size: int
    checksum: bytes


@dataclass(frozen=True)
class Entry:
    section_id: int
    encoding: Encoding
    offset: int
    size: int
    checksum: bytes

    @property
    def name(self) -> str:
        return section_name(self.section_id)

    @property
    def label(self) -> str:
        return section_label(self.section_id)


class Container:
    """A verified, memory-mapped .urna file. Use as a context manager or call ``close()``."""

    def __init__(
        self, path: str | os.PathLike[str], *, verify: Verify = "full", private: bool = False
    ) -> None:
        if verify not in ("full", "trusted"):
            raise ValueError(f"verify must be 'full' or 'trusted', got {verify!r}")
        self.path = Path(path)
        self.verify = verify
        self._mmap, self.size = map_file(self.path, private=private)
        self.buf = memoryview(self._mmap) if self._mmap is not None else memoryview(b"")
        self._file_hash: str | None = None
        self._decoded: dict[int, memoryview] = {}
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    # --- public view --------------------------------------------------------

    @property
    def file_hash(self) -> str:
        """``sha256:`` + hex SHA-256 of the whole file, footer included."""
        if self._file_hash is None:
            self._file_hash = "sha256:" + hashlib.sha256(self.buf).hexdigest()
        return self._file_hash

    @cached_property
    def content_hash(self) -> str:
        """SHA-256 over the six decoded canonical sections (computed on first use)."""
        return hash_content((section_name(sid), self.payload(sid)) for sid in REQUIRED_SECTIONS)

    def payload(self, section_id: int) -> memoryview:
        """The decoded payload of a present section (zstd undone; a view of the map when raw)."""
        if section_id in self._decoded:
            return self._decoded[section_id]
        entry = self.entries[section_id]
        stored = self.buf[entry.offset : entry.offset + entry.size]
        if entry.encoding != Encoding.ZSTD:
            return stored
        decoded = memoryview(_unzstd(entry, stored))
        self._decoded[section_id] = decoded
        return decoded

    def space_matrix(self, space: Space) -> emb.Matrix:
        n = self.header.n_chunks
        return emb.view(self.payload(space.section), Encoding.RAW, n, space.dim)

    def has(self, section_id: int) -> bool:
        return section_id in self.entries

    def close(self) -> None:
        """Release the memory map (views still held elsewhere keep it alive until dropped)."""
        for name in ("matrix", "texts", "spans", "chunk_id_rows"):
            self.__dict__.pop(name, None)
        self._decoded.clear()
        if getattr(self, "buf", None) is not None:
            try:
                self.buf.release()
            except BufferError:
                return
        if self._mmap is not None:
            # A numpy view handed out earlier may still exist; the GC closes the map then.
            with contextlib.suppress(BufferError):
                self._mmap.close()

    def __enter__(self) -> Container:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the checks ----------------------------------------------------------

    def _open(self) -> None:
        buf, size = self.buf, self.size
        # 1. length
        if size < MIN_FILE_SIZE:
            raise fail(1, "file", f"file truncated: {size} bytes, a .urna file has at least 168")
        raw_header = buf[:HEADER_SIZE]
        h = Header(*HEADER.unpack(raw_header)[:13])
        # 2. magic
        if h.magic not in (MAGIC, LEGACY_MAGIC):
            raise fail(2, "header", f"magic mismatch: expected b'URNA', got {bytes(h.magic)!r}")
        # 3. version
        if h.version_major != VERSION_MAJOR or h.version_minor > VERSION_MINOR:
            raise fail(
                3,
                "header",
                f"unsupported version {h.version_major}.{h.version_minor}: "
                f"this reader reads {VERSION_MAJOR}.{VERSION_MINOR}",
            )
        if h.flags != 0:
            raise fail(3, "header", f"unsupported header flags 0x{h.flags:08x}, expected 0")
        # 4. header checksum
        if header_checksum(raw_header) != h.checksum:
            raise mismatch(4, "header", "header checksum mismatch")
        if bytes(raw_header[80:128]) != bytes(48):
            raise fail(4, "header", "reserved header bytes [80, 128) are not zero")
        # 5. file size
        if h.file_size != size:
            raise fail(5, "header", f"file size mismatch: expected {h.file_size}, got {size}")
        self.header = h
        # 6. section table
        body_end = size - FOOTER_SIZE
        if h.section_table_offset != HEADER_SIZE:
            raise fail(
                6,
                "section table",
                f"section table offset is {h.section_table_offset}, expected 128",
            )
        if h.section_table_count > MAX_SECTIONS or (
            HEADER_SIZE + ENTRY_SIZE * h.section_table_count > body_end
        ):
            raise fail(
                6,
                "section table",
                f"section table of {h.section_table_count} entries does not fit in {size} bytes",
            )
        table_end = HEADER_SIZE + ENTRY_SIZE * h.section_table_count
        # 7. each entry (structure first; the checksums are hashed below)
        entries = self._read_entries(table_end, body_end)
        self.entries = entries
        hashing = self.verify == "full"
        section_sums, file_sum, pool = self._start_hashes() if hashing else (None, None, None)
        try:
            pending: FormatError | None = None
            try:
                self._check_contents(table_end, body_end, nan_walk=hashing)
            except FormatError as exc:
                pending = exc
            if section_sums is not None:
                for entry, digest in zip(entries.values(), _result(section_sums), strict=True):
                    if digest != entry.checksum:
                        raise mismatch(
                            7,
                            f"section {entry.label}",
                            f"section {entry.section_id} checksum mismatch",
                        )
            if pending is not None and pending.check <= 8:
                raise pending
            if file_sum is not None:
                before_footer, whole = _result(file_sum)
                stored = bytes(buf[body_end + 8 : size])
                if before_footer != stored:
                    raise mismatch(9, "footer", "footer hash mismatch")
                self._file_hash = "sha256:" + whole
            if pending is not None:
                raise pending
        finally:
            if pool is not None:
                pool.shutdown(wait=True)

    def _read_entries(self, table_end: int, body_end: int) -> dict[int, Entry]:
        entries: dict[int, Entry] = {}
        manifest_end = self.header.manifest_offset + self.header.manifest_size
        spans: list[tuple[int, int, Entry]] = []
        for i in range(self.header.section_table_count):
            sid, enc, offset, size, checksum = ENTRY.unpack_from(
                self.buf, HEADER_SIZE + ENTRY_SIZE * i
            )
            where = f"section {section_label(sid)}"
            try:
                encoding = Encoding(enc)
            except ValueError:
                raise fail(7, where, f"unknown encoding {enc} on section {sid}") from None
            if encoding in UNSUPPORTED_ENCODINGS:
                raise fail(
                    7, where, f"unsupported encoding {encoding.label} ({enc}) on section {sid}"
                )
            allowed = EMBEDDING_ENCODINGS if is_embedding_section(sid) else OTHER_ENCODINGS
            if encoding not in allowed:
                raise fail(7, where, f"encoding {encoding.label} is not allowed on section {sid}")
            if sid in entries:
                raise fail(7, where, f"section {sid} appears twice in the section table")
            if offset % ALIGN:
                raise fail(7, where, f"section {sid} offset {offset} is not a multiple of 64")
            if offset < max(table_end, manifest_end) or offset + size > body_end:
                raise fail(
                    7,
                    where,
                    f"section {sid} at [{offset}, {offset + size}) lies outside the payload area "
                    f"[{max(table_end, manifest_end)}, {body_end})",
                )
            entry = Entry(sid, encoding, offset, size, checksum)
            entries[sid] = entry
            spans.append((offset, offset + size, entry))
        spans.sort(key=lambda s: s[0])
        for (_, end_a, a), (start_b, _, b) in itertools.pairwise(spans):
            if start_b < end_a:
                raise fail(
                    7,
                    f"section {b.label}",
                    f"section {b.section_id} overlaps section {a.section_id}",
                )
        return entries

    def _start_hashes(self) -> tuple[Future[list[bytes]], Future[tuple[bytes, str]], Any]:
        buf, entries, size = self.buf, list(self.entries.values()), self.size

        def section_digests() -> list[bytes]:
            return [hashlib.sha256(buf[e.offset : e.offset + e.size]).digest()[:8] for e in entries]

        def file_digests() -> tuple[bytes, str]:
            h = hashlib.sha256(buf[: size - FOOTER_SIZE])
            before_footer = h.digest()
            h.update(buf[size - FOOTER_SIZE :])
            return before_footer, h.hexdigest()

        if size < PARALLEL_HASH_MIN:
            return _done(section_digests()), _done(file_digests()), None
        pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="urna-verify")
        return pool.submit(section_digests), pool.submit(file_digests), pool

    def _check_contents(self, table_end: int, body_end: int, *, nan_walk: bool) -> None:
        """Checks 8 and 10 to 16 (format/checks.py), keeping what each one decoded."""
        h, entries = self.header, self.entries
        self.manifest = checks.check_manifest(self.buf, h, table_end, body_end)
        n, dim = h.n_chunks, h.embedding_dim
        self.matrix = checks.check_embeddings(self.buf, entries, self.manifest, n, dim)
        self.spaces = checks.check_spaces(self.payload, entries, n)
        self.search_contract = checks.check_contract(self.payload, self.manifest)
        canonical = checks.check_canonical(self.payload, entries, n)
        self.chunk_id_rows = canonical.chunk_id_rows
        self.texts = canonical.texts
        self.spans = canonical.spans
        self.chunk_meta = canonical.chunk_meta
        self.chunk_fields = (
            decode_fields(self.payload(SectionId.CHUNK_FIELDS), n)
            if SectionId.CHUNK_FIELDS in entries
            else None
        )
        self.provenance = canonical.provenance
        if nan_walk:
            checks.check_finite(self.matrix, [(sp, self.space_matrix(sp)) for sp in self.spaces])


def _unzstd(entry: Entry, stored: memoryview) -> bytes:
    where = f"section {entry.label}"
    sid = entry.section_id
    try:
        size = zstandard.frame_content_size(stored)
        if size < 0 or size > MAX_DECODED_SECTION:
            raise fail(8, where, f"zstd payload of section {sid} lacks a usable content size")
        if size > max(ZSTD_FLOOR, ZSTD_RATIO * len(stored)):
            raise fail(
                8,
                where,
                f"zstd payload of section {sid} claims {size} bytes from {len(stored)} stored "
                f"(over {ZSTD_RATIO}x): refused as a decompression bomb",
            )
        out = zstandard.ZstdDecompressor().decompress(stored, max_output_size=max(size, 1))
    except zstandard.ZstdError as exc:
        raise fail(8, where, f"zstd payload of section {sid} is invalid: {exc}") from None
    if len(out) != size:
        raise fail(
            8,
            where,
            f"zstd payload of section {sid} decodes to {len(out)} bytes, frame says {size}",
        )
    return out


def _done(value: Any) -> Future[Any]:
    fut: Future[Any] = Future()
    fut.set_result(value)
    return fut


def _result(fut: Future[Any]) -> Any:
    return fut.result()


__all__ = ["Container", "Entry", "Header", "Verify"]
