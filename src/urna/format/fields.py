"""0x11 chunk_fields: the metadata a document says about itself, typed, per chunk.

Layout (raw or zstd): the 12-byte prefix (u32 version = 1, u64 count = R records), then R
records, each a u32 length and a compact JSON object (keys sorted), then one u32 per chunk in
file order: the index of its record. Chunks of one document share one record.

A value is one of six types: string, integer (a signed 64-bit JSON integer), float (a finite
JSON number with a fraction or exponent), boolean, date (``{"$date": "<ISO 8601>"}``: a
calendar date ``YYYY-MM-DD`` or a UTC time ``YYYY-MM-DDTHH:MM:SSZ``), list (a JSON array of
strings). Anything else is refused. The section does not enter content_hash: adding metadata
never changes a citation.

The structure (prefix, records inside the payload, one index per chunk, each below R, no
trailing bytes) is checked at open; the records' JSON is parsed the first time a filter or
``stats`` needs it, and ``validate`` parses every record.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from urna.errors import BuildError, FormatError
from urna.format.layout import PREFIX, PREFIX_VERSION, SectionId, section_label

U32 = struct.Struct("<I")
MAX_FIELD_NAME = 200
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z)?")
TYPES = ("string", "integer", "float", "boolean", "date", "list")
I64 = 1 << 63


class Date(str):
    """An ISO 8601 date (``2020-01-31``) or UTC time (``2020-01-31T08:00:00Z``): ordered as
    its text, which orders them in time (a date sorts before any time on that day)."""

    __slots__ = ()


Value = str | int | float | bool | Date | list[str]


def type_of(value: Any) -> str:
    """The type name of a stored value (``TYPES``)."""
    if isinstance(value, Date):
        return "date"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "list"


def _err(message: str) -> FormatError:
    return FormatError(message, check=8, section=f"section {section_label(SectionId.CHUNK_FIELDS)}")


def _to_json(value: Value) -> Any:
    return {"$date": str(value)} if isinstance(value, Date) else value


def _plain(value: Any, where: str, fail: Callable[[str], Exception]) -> Value:
    """A string, integer, float, boolean or list of strings, checked (dates are each
    caller's: a JSON object when read, a ``date`` or ``datetime`` when built)."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if not -I64 <= value < I64:
            raise fail(f"{where}: integer {value} is outside 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise fail(f"{where}: a float must be finite")
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    raise fail(
        f"{where}: {type(value).__name__} is not a metadata value (string, integer, float, "
        "boolean, date, list of strings)"
    )


def _from_json(value: Any, where: str) -> Value:
    if isinstance(value, dict):
        date = value.get("$date")
        if len(value) != 1 or not isinstance(date, str) or not _DATE.fullmatch(date):
            raise _err(f'{where}: an object value must be {{"$date": ISO 8601}}')
        return Date(date)
    return _plain(value, where, _err)


def encode_fields(records: Sequence[Mapping[str, Value]], of_chunk: Sequence[int]) -> bytes:
    """The section payload for distinct ``records`` and each chunk's record index."""
    parts = [PREFIX.pack(PREFIX_VERSION, len(records))]
    for record in records:
        body = {k: _to_json(record[k]) for k in sorted(record)}
        raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        parts.append(U32.pack(len(raw)))
        parts.append(raw)
    parts.append(np.asarray(of_chunk, dtype="<u4").tobytes())
    return b"".join(parts)


@dataclass
class ChunkFields:
    """The decoded section: each chunk's record, and the records parsed on first use."""

    payload: memoryview
    spans: list[tuple[int, int]]
    of_chunk: np.ndarray  # (n,) record index per chunk
    _records: list[dict[str, Value]] | None = field(default=None, repr=False)

    @property
    def records(self) -> list[dict[str, Value]]:
        if self._records is None:
            self._records = [self._parse(i) for i in range(len(self.spans))]
        return self._records

    def _parse(self, i: int) -> dict[str, Value]:
        start, end = self.spans[i]
        where = f"record {i}"
        try:
            obj = json.loads(bytes(self.payload[start:end]).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise _err(f"{where} is not valid JSON") from None
        if not isinstance(obj, dict):
            raise _err(f"{where} is not a JSON object")
        out: dict[str, Value] = {}
        for key, value in obj.items():
            if not key or len(key) > MAX_FIELD_NAME:
                raise _err(f"{where}: a field name must be 1 to {MAX_FIELD_NAME} characters")
            out[key] = _from_json(value, f"{where} field {key!r}")
        return out


def decode_fields(payload: memoryview, n_chunks: int) -> ChunkFields:
    """Check the structure; the records' JSON is parsed later (``ChunkFields.records``)."""
    size = len(payload)
    if size < PREFIX.size:
        raise _err(f"payload truncated: {size} bytes, prefix needs 12")
    version, count = PREFIX.unpack_from(payload, 0)
    if version != PREFIX_VERSION:
        raise _err(f"unsupported payload version {version}, expected {PREFIX_VERSION}")
    if count > (size - PREFIX.size) // 4:
        raise _err(f"{count} records cannot fit in {size} bytes")
    spans = []
    pos = PREFIX.size
    for i in range(count):
        if pos + 4 > size:
            raise _err(f"record {i} runs past the end of the section")
        (length,) = U32.unpack_from(payload, pos)
        pos += 4
        if pos + length > size:
            raise _err(f"record {i} runs past the end of the section")
        spans.append((pos, pos + length))
        pos += length
    if size - pos != 4 * n_chunks:
        raise _err(
            f"expected {n_chunks} record indexes after the records, found {size - pos} bytes"
        )
    of_chunk = np.frombuffer(payload, dtype="<u4", offset=pos, count=n_chunks)
    if n_chunks and int(of_chunk.max()) >= count:
        bad = int(np.flatnonzero(of_chunk >= count)[0])
        raise _err(f"chunk {bad} names record {int(of_chunk[bad])}, there are {count}")
    return ChunkFields(payload, spans, of_chunk)


def checked_fields(value: Any, where: str) -> dict[str, Value]:
    """A build's metadata for one chunk, checked: None or a mapping of names to values of
    the six types (a ``datetime.date`` or ``datetime`` is taken as a date)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BuildError(f"{where} metadata must be a mapping, got {type(value).__name__}")
    out: dict[str, Value] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key or len(key) > MAX_FIELD_NAME:
            raise BuildError(f"{where} metadata names must be 1 to {MAX_FIELD_NAME} characters")
        out[key] = _checked_value(item, f"{where} metadata {key!r}")
    return out


def _checked_value(item: Any, where: str) -> Value:
    if isinstance(item, Date):
        if not _DATE.fullmatch(item):
            raise BuildError(f"{where}: a date must be YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ")
        return item
    if isinstance(item, dt.datetime):
        if item.tzinfo is not None:
            item = item.astimezone(dt.UTC).replace(tzinfo=None)
        return Date(item.isoformat(timespec="seconds") + "Z")
    if isinstance(item, dt.date):
        return Date(item.isoformat())
    return _plain(item, where, BuildError)


def records_of(
    fields: Sequence[Mapping[str, Value]],
) -> tuple[list[Mapping[str, Value]], list[int]]:
    """Distinct records and each chunk's index into them (chunks of a document share one)."""
    index: dict[bytes, int] = {}
    records: list[Mapping[str, Value]] = []
    of_chunk = []
    for record in fields:
        key = json.dumps(
            {k: [type_of(v), _to_json(v)] for k, v in record.items()}, sort_keys=True
        ).encode("utf-8")
        found = index.get(key)
        if found is None:
            found = index[key] = len(records)
            records.append(record)
        of_chunk.append(found)
    return records, of_chunk
