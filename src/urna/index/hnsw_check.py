"""The structure of a stored usearch graph, checked before usearch ever traverses it.

usearch views a serialized index in place and trusts it: a neighbour id past the end,
a level that a node does not have, or a node list longer than the payload makes a
search read outside the buffer (a crash, not an error). So the open walks the whole
layout first, vectorized, and refuses anything a search could trip on.

Layout (usearch 2.x dense index, as ``Index.save()`` writes it): u32 rows, u32 columns
(bytes per vector), the rows x columns matrix; the 64-byte dense header; the graph
header (u64 size, connectivity, connectivity_base, max_level, entry_slot); one i16 level
per node; then each node: u64 key, i16 level, and for each of its levels 0..level a u32
neighbour count and a fixed array of u32 neighbour slots (connectivity_base of them at
level 0, connectivity above).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from urna.errors import FormatError

_MATRIX = struct.Struct("<II")
_DENSE_HEAD = 64
_GRAPH = struct.Struct("<5Q")
_NODE_HEAD = 10  # u64 key + i16 level
MAX_LEVEL = 64
BLOCK = 8192  # nodes checked per vectorized step


def check_graph(
    blob: memoryview, count: int, dim: int, connectivity: int, bad: Callable[[str], FormatError]
) -> Layout:
    """Refuse (raise ``bad(message)``) a serialized index a search could read past; return
    where its lists are."""
    size = len(blob)
    if size < _MATRIX.size:
        raise bad("usearch payload is too short")
    rows, columns = _MATRIX.unpack_from(blob, 0)
    if rows != count or columns != dim:
        raise bad(f"usearch matrix is {rows} x {columns} bytes, expected {count} x {dim}")
    pos = _MATRIX.size + rows * columns + _DENSE_HEAD
    if pos + _GRAPH.size > size:
        raise bad("usearch graph header runs past the end")
    nodes, conn, conn_base, max_level, entry = _GRAPH.unpack_from(blob, pos)
    pos += _GRAPH.size
    if nodes != count:
        raise bad(f"usearch graph holds {nodes} nodes, expected {count}")
    if conn != connectivity or conn_base != 2 * connectivity:
        raise bad(f"usearch connectivity {conn}/{conn_base}, expected {connectivity}")
    if max_level >= MAX_LEVEL or (count and entry >= count):
        raise bad(f"usearch entry slot {entry} or max level {max_level} out of range")
    if pos + 2 * count > size:
        raise bad("usearch level table runs past the end")
    levels = np.frombuffer(blob, dtype="<i2", count=count, offset=pos).astype(np.int64)
    pos += 2 * count
    if count and (levels.min() < 0 or levels.max() != max_level or levels[entry] != max_level):
        raise bad("usearch node levels disagree with the graph header")
    base = 4 + 4 * conn_base
    upper = 4 + 4 * conn
    node_size = _NODE_HEAD + base + levels * upper
    ends = pos + np.cumsum(node_size)
    if count and int(ends[-1]) != size:
        raise bad(f"usearch nodes end at byte {int(ends[-1])}, the payload has {size}")
    starts = ends - node_size
    raw = np.frombuffer(blob, dtype=np.uint8)
    for lo in range(0, count, BLOCK):
        _check_block(raw, starts[lo : lo + BLOCK], levels, lo, conn, conn_base, bad)
    return Layout(raw, starts, levels, int(conn), int(conn_base), int(entry))


@dataclass(frozen=True)
class Layout:
    """Where each node's neighbour lists are, once ``check_graph`` has proven them sound."""

    raw: np.ndarray
    starts: np.ndarray
    levels: np.ndarray
    conn: int
    conn_base: int
    entry: int

    def neighbours(self, nodes: np.ndarray, level: int) -> np.ndarray:
        """Every neighbour the nodes (each having ``level``) list at that level."""
        base = 4 + 4 * self.conn_base
        at = self.starts[nodes] + _NODE_HEAD
        if level:
            at = at + base + (level - 1) * (4 + 4 * self.conn)
        cap = self.conn_base if level == 0 else self.conn
        counts = _u32(self.raw, at).astype(np.int64)
        ids = _u32(self.raw, at[:, None] + 4 + 4 * np.arange(cap)[None, :]).astype(np.int64)
        return ids[np.arange(cap)[None, :] < counts[:, None]]

    def first_unreachable(self) -> int | None:
        """The first node that no walk from the entry point reaches over the edges of any
        level (a search could never return it), or None."""
        count = len(self.levels)
        if not count:
            return None
        seen = np.zeros(count, dtype=bool)
        seen[self.entry] = True
        frontier = np.array([self.entry], dtype=np.int64)
        while frontier.size:
            found = []
            for lo in range(0, len(frontier), BLOCK):
                part = frontier[lo : lo + BLOCK]
                for level in range(int(self.levels[part].max()) + 1):
                    found.append(self.neighbours(part[self.levels[part] >= level], level))
            reached = np.unique(np.concatenate(found)) if found else frontier[:0]
            frontier = reached[~seen[reached]]
            seen[frontier] = True
        missing = np.flatnonzero(~seen)
        return int(missing[0]) if len(missing) else None


def _u32(raw: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Little-endian u32 values at byte offsets ``at`` (any shape)."""
    b = [raw[at + i].astype(np.uint64) for i in range(4)]
    return b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24)


def _check_block(
    raw: np.ndarray,
    starts: np.ndarray,
    levels: np.ndarray,
    first: int,
    conn: int,
    conn_base: int,
    bad: Callable[[str], FormatError],
) -> None:
    slots = np.arange(first, first + len(starts))
    keys = _u32(raw, starts) | (_u32(raw, starts + 4) << 32)
    if not np.array_equal(keys, slots.astype(np.uint64)):
        raise bad(f"usearch node keys must be their slots (near node {first})")
    own = raw[starts + 8].astype(np.int64) | (raw[starts + 9].astype(np.int64) << 8)
    if not np.array_equal(own, levels[slots]):
        raise bad(f"usearch node levels disagree with the level table (near node {first})")
    base = 4 + 4 * conn_base
    for level in range(int(levels[slots].max()) + 1):
        has = levels[slots] >= level
        at = starts[has] + _NODE_HEAD + (0 if level == 0 else base + (level - 1) * (4 + 4 * conn))
        cap = conn_base if level == 0 else conn
        counts = _u32(raw, at).astype(np.int64)
        if counts.size and counts.max() > cap:
            raise bad(f"usearch node lists {int(counts.max())} neighbours, at most {cap}")
        ids = _u32(raw, at[:, None] + 4 + 4 * np.arange(cap)[None, :]).astype(np.int64)
        used = np.arange(cap)[None, :] < counts[:, None]
        named = ids[used]
        if named.size and named.max() >= len(levels):
            raise bad(f"usearch neighbour {int(named.max())} is past the {len(levels)} nodes")
        if level and named.size and levels[named].min() < level:
            raise bad(f"usearch level-{level} neighbour lacks that level")
