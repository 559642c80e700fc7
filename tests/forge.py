"""Take a .urna file apart and put it back together with every checksum recomputed.

Used to make files that pass every hash but break a structural rule, the
kind of file a buggy or hostile writer would produce.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

HEADER = struct.Struct("<4sHHIIQQQQQQQ8s48s")
ENTRY = struct.Struct("<IIQQ8s")


@dataclass
class Parts:
    header: list[object]
    manifest: bytes
    sections: dict[int, tuple[int, bytes]] = field(default_factory=dict)  # id -> (encoding, bytes)


def take_apart(data: bytes) -> Parts:
    header = list(HEADER.unpack_from(data, 0))
    count, moff, msize = header[9], header[10], header[11]
    parts = Parts(header=header, manifest=data[moff : moff + msize])  # type: ignore[index,operator]
    for i in range(count):  # type: ignore[arg-type]
        sid, enc, off, size, _ = ENTRY.unpack_from(data, 128 + 32 * i)
        parts.sections[sid] = (enc, data[off : off + size])
    return parts


def put_together(parts: Parts, *, fix_sizes: bool = True) -> bytes:
    """Lay the parts out as the writer does, recomputing offsets, checksums and the footer."""
    header = list(parts.header)
    ids = sorted(parts.sections)
    header[9] = len(ids)
    header[10] = 128 + 32 * len(ids)
    header[11] = len(parts.manifest)
    pos = header[10] + len(parts.manifest)  # type: ignore[operator]
    table, body = b"", b""
    start = pos
    for sid in ids:
        enc, payload = parts.sections[sid]
        off = -(-pos // 64) * 64
        body += b"\0" * (off - pos) + payload
        table += ENTRY.pack(sid, enc, off, len(payload), hashlib.sha256(payload).digest()[:8])
        pos = off + len(payload)
    if fix_sizes:
        header[7] = pos + 40
    raw = bytearray(HEADER.pack(*header))
    digest = hashlib.sha256(bytes(raw[:72]) + bytes(raw[80:])).digest()[:8]
    raw[72:80] = digest
    prefix = bytes(raw) + table + parts.manifest + body
    assert len(prefix) == pos and start == 128 + len(table) + len(parts.manifest)
    return prefix + struct.pack("<Q", 40) + hashlib.sha256(prefix).digest()


def reseal(data: bytes) -> bytes:
    """Recompute every checksum of a same-layout file after its bytes were edited in place."""
    return put_together(take_apart(data))
