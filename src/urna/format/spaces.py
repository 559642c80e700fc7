"""Named embedding spaces: the space table (0x15) and the bands 0x20 + i (i = 1..15).

Payload of 0x15 (version 1): the 12-byte prefix (u32 version, u64 count =
number of spaces), then compact JSON: an array of objects {"name", "model",
"model_hash", "dim", "section"} in band order, names unique and non-empty,
``section`` = 0x20 + i for the i-th space (1-based). Each band is raw float32,
n_chunks x dim, unit rows. Check 13 of the open: the table decodes, every band
it names exists with exactly that size, and no band exists that it does not name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from urna.errors import FormatError
from urna.format import manifest as manifest_json
from urna.format.layout import (
    PREFIX,
    PREFIX_VERSION,
    SPACE_BAND_FIRST,
    SPACE_BAND_LAST,
    Encoding,
    SectionId,
    section_label,
)

MAX_SPACES = SPACE_BAND_LAST - SPACE_BAND_FIRST + 1
WHERE = f"section {section_label(SectionId.SPACE_TABLE)}"


@dataclass(frozen=True)
class Space:
    name: str
    model: str
    model_hash: str
    dim: int
    section: int


def encode_space_table(spaces: list[Space]) -> bytes:
    body = manifest_json.dumps(
        [
            {
                "name": s.name,
                "model": s.model,
                "model_hash": s.model_hash,
                "dim": s.dim,
                "section": s.section,
            }
            for s in spaces
        ]
    )
    return PREFIX.pack(PREFIX_VERSION, len(spaces)) + body


def _bad(message: str, where: str = WHERE) -> FormatError:
    return FormatError(message, check=13, section=where)


def decode_space_table(
    payload: memoryview, entries: Mapping[int, Any], n_chunks: int
) -> list[Space]:
    if len(payload) < PREFIX.size:
        raise _bad("space table truncated")
    version, count = PREFIX.unpack_from(payload, 0)
    if version != PREFIX_VERSION:
        raise _bad(f"space table version {version}, expected {PREFIX_VERSION}")
    try:
        raw = manifest_json.strict_loads(bytes(payload[PREFIX.size :]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad(f"space table is not valid JSON: {exc}") from None
    if not isinstance(raw, list) or len(raw) != count or count > MAX_SPACES:
        raise _bad(f"space table must list {count} spaces (at most {MAX_SPACES})")
    spaces, names = [], set()
    for i, item in enumerate(raw, 1):
        ok = isinstance(item, dict) and all(
            isinstance(item.get(k), t)
            for k, t in (
                ("name", str),
                ("model", str),
                ("model_hash", str),
                ("dim", int),
                ("section", int),
            )
        )
        if not ok or not item["name"] or item["dim"] <= 0 or item["section"] != 0x20 + i:
            raise _bad(f"space table entry {i} is malformed: {item!r}"[:200])
        if item["name"] in names:
            raise _bad(f"space name {item['name']!r} appears twice")
        if not manifest_json.HASH_RE.fullmatch(item["model_hash"]):
            raise _bad(f"space {item['name']} model_hash must be sha256:<64 hex>")
        names.add(item["name"])
        spaces.append(
            Space(item["name"], item["model"], item["model_hash"], item["dim"], item["section"])
        )
    for space in spaces:
        entry = entries.get(space.section)
        where = f"section {section_label(space.section)}"
        if entry is None:
            raise _bad(
                f"embedding space {space.name}: band 0x{space.section:02X} is missing", where
            )
        if entry.encoding != Encoding.RAW:
            raise _bad(f"embedding space {space.name}: band must be raw float32", where)
        expected = n_chunks * space.dim * 4
        if entry.size != expected:
            raise _bad(f"embedding size mismatch: expected {expected}, got {entry.size}", where)
    named = {s.section for s in spaces}
    for sid in entries:
        if SPACE_BAND_FIRST <= sid <= SPACE_BAND_LAST and sid not in named:
            raise _bad(
                f"band 0x{sid:02X} is not named in the space table", f"section {section_label(sid)}"
            )
    return spaces
