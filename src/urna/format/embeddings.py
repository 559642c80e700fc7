"""Embedding matrices: float32 (raw), float16 and int8 payloads, viewed without copying.

int8 layout: u32 version = 1, u32 scale_kind = 0, n float32 per-row scales,
then n*dim int8 row-major; scale = max|v| / 127, q = clamp(round(v / scale),
-127, 127) with round half away from zero; an all-zero row gets scale 1.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from urna.format.layout import Encoding

INT8_HEADER = struct.Struct("<II")
INT8_VERSION = 1
INT8_SCALE_KIND = 0

# Rows per block when a quantized matrix is dequantized on the fly (~16 MiB of float32 at dim 256).
BLOCK_ROWS = 16384
# Bytes of the buffer a quantized block is widened into while scoring (fits in L2; measured).
BLOCK_BYTES = 1 << 20


def expected_size(encoding: Encoding, n: int, dim: int) -> int:
    if encoding == Encoding.RAW:
        return n * dim * 4
    if encoding == Encoding.FLOAT16:
        return n * dim * 2
    if encoding == Encoding.INT8:
        return INT8_HEADER.size + n * 4 + n * dim
    raise ValueError(f"no embedding layout for encoding {encoding.label}")


def quantize_int8(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row symmetric int8 quantization of a float32 matrix: (scales, codes)."""
    m = np.asarray(matrix, dtype=np.float32)
    maxabs = np.max(np.abs(m), axis=1) if m.shape[1] else np.zeros(len(m), np.float32)
    scales = (maxabs / np.float32(127.0)).astype(np.float32)
    scales[maxabs == 0] = np.float32(1.0)
    scaled = m / scales[:, None]
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + np.float32(0.5))
    codes = np.clip(rounded, -127, 127).astype(np.int8)
    return scales, codes


def encode(matrix: np.ndarray, encoding: Encoding) -> bytes:
    """The payload bytes of a float32 (n, dim) matrix in ``encoding``."""
    m = np.ascontiguousarray(matrix, dtype=np.float32)
    if encoding == Encoding.RAW:
        return m.astype("<f4", copy=False).tobytes()
    if encoding == Encoding.FLOAT16:
        return m.astype("<f2").tobytes()
    if encoding == Encoding.INT8:
        scales, codes = quantize_int8(m)
        header = INT8_HEADER.pack(INT8_VERSION, INT8_SCALE_KIND)
        return header + scales.astype("<f4").tobytes() + codes.tobytes()
    raise ValueError(f"embeddings cannot be written as {encoding.label}")


@dataclass(frozen=True)
class Matrix:
    """An (n, dim) embedding matrix viewed straight from the file's bytes.

    ``values`` is float32, float16 or int8; int8 rows are multiplied by
    ``scales``. Nothing here copies the matrix: blocks are dequantized as
    they are scored.
    """

    encoding: Encoding
    values: np.ndarray
    scales: np.ndarray | None
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)  # per-open

    @property
    def n(self) -> int:
        return int(self.values.shape[0])

    @property
    def dim(self) -> int:
        return int(self.values.shape[1])

    @property
    def dtype(self) -> str:
        return {Encoding.RAW: "float32", Encoding.FLOAT16: "float16", Encoding.INT8: "int8"}[
            self.encoding
        ]

    def rows(self, index: np.ndarray | slice) -> np.ndarray:
        """Selected rows as float32 (dequantized)."""
        block = self.values[index].astype(np.float32)
        if self.scales is not None:
            with np.errstate(over="ignore", invalid="ignore"):  # a forged scale: inf, set aside
                block *= self.scales[index][..., None] if block.ndim == 2 else self.scales[index]
        return block

    def blocks(self, block_rows: int = BLOCK_ROWS) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, float32 block) pairs covering the matrix in order."""
        for start in range(0, self.n, block_rows):
            yield start, self.rows(slice(start, start + block_rows))

    def dot(self, query: np.ndarray) -> np.ndarray:
        """Scores of every row against a float32 query: one matrix-vector product.

        float32 goes straight to BLAS over the memory map. float16 and int8 are
        widened block by block into one reused buffer, so no float32 copy of
        the matrix is ever made.
        """
        q = np.asarray(query, dtype=np.float32)
        # A forged row or scale may overflow: the score becomes inf/NaN and top_k drops it.
        with np.errstate(over="ignore", invalid="ignore"):
            if self.encoding == Encoding.RAW:
                return self.values @ q
            out = np.empty(self.n, dtype=np.float32)
            if self.encoding == Encoding.FLOAT16:
                _dot_float16(self.values, q, out)
            else:
                _dot_int8(self.values, q, out)
                assert self.scales is not None
                out *= self.scales
            return out

    def first_not_unit(self) -> tuple[int, float] | None:
        """The first row whose L2 norm is not 1 within what the stored precision allows, and
        its norm (the manifest says rows are L2-normalized; a huge finite row would make
        every score NaN or infinite), or None."""
        tolerance = {Encoding.RAW: 1e-3, Encoding.FLOAT16: 1e-2}.get(self.encoding, 5e-2)
        for start, block in self.blocks():
            norms = np.sqrt(np.square(block.astype(np.float64)).sum(axis=1))
            off = np.flatnonzero(~(np.abs(norms - 1.0) <= tolerance))
            if len(off):
                return start + int(off[0]), float(norms[off[0]])
        return None

    def first_non_finite(self) -> int | None:
        """Index of the first row holding NaN or Inf (for int8: a bad scale), or None."""
        if self.scales is not None:
            bad = np.flatnonzero(~np.isfinite(self.scales))
            return int(bad[0]) if len(bad) else None
        # NaN and Inf are the values whose exponent bits are all ones.
        if self.encoding == Encoding.RAW:
            bits, mask = self.values.view(np.uint32), 0x7F800000
        else:
            bits, mask = self.values.view(np.uint16), 0x7C00
        step = max(1, (1 << 22) // max(1, self.dim))
        for start in range(0, self.n, step):
            block = bits[start : start + step]
            hit = np.bitwise_and(block, mask) == mask
            if hit.any():
                return start + int(np.flatnonzero(hit.any(axis=1))[0])
        return None


_local = threading.local()
# float16 -> float32 by bit placement: sign-extend to int32, shift the exponent and
# mantissa into float32 position, keep the sign bit and those 15 bits. The result
# is the float16 value times 2**-112, exact for normal, subnormal and zero values
# (NaN/Inf never reach here: the reader refuses them), so the query is scaled by
# 2**112 instead. Three integer passes in cache beat numpy's float16 cast ~6x.
_F16_KEEP = np.int32(-0x70002000)  # 0x8FFFE000: bit 31 and bits 27..13
_F16_SCALE = np.float32(2.0**112)


def _buffer(rows: int, dim: int, dtype: type) -> np.ndarray:
    key = (rows, dim, dtype)
    cache = getattr(_local, "buffers", None)
    if cache is None:
        cache = _local.buffers = {}
    buf = cache.get(key)
    if buf is None:
        buf = cache[key] = np.empty((rows, dim), dtype=dtype)
    return buf


def _dot_float16(values: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    n, dim = values.shape
    rows = max(1, BLOCK_BYTES // (4 * max(1, dim)))
    buf = _buffer(rows, dim, np.int32)
    scaled = (q * _F16_SCALE).astype(np.float32)
    signed = values.view(np.int16)
    for start in range(0, n, rows):
        block = signed[start : start + rows]
        b = buf[: len(block)]
        np.copyto(b, block, casting="unsafe")
        np.left_shift(b, 13, out=b)
        np.bitwise_and(b, _F16_KEEP, out=b)
        np.matmul(b.view(np.float32), scaled, out=out[start : start + len(block)])


def _dot_int8(values: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    n, dim = values.shape
    rows = max(1, BLOCK_BYTES // (4 * max(1, dim)))
    buf = _buffer(rows, dim, np.float32)
    for start in range(0, n, rows):
        block = values[start : start + rows]
        b = buf[: len(block)]
        np.copyto(b, block, casting="unsafe")
        np.matmul(b, q, out=out[start : start + len(block)])


def view(payload: memoryview, encoding: Encoding, n: int, dim: int) -> Matrix:
    """View a payload whose size has already been checked against (encoding, n, dim)."""
    if encoding == Encoding.RAW:
        values = np.frombuffer(payload, dtype="<f4", count=n * dim).reshape(n, dim)
        return Matrix(encoding, values, None)
    if encoding == Encoding.FLOAT16:
        values = np.frombuffer(payload, dtype="<f2", count=n * dim).reshape(n, dim)
        return Matrix(encoding, values, None)
    if encoding == Encoding.INT8:
        scales = np.frombuffer(payload, dtype="<f4", count=n, offset=INT8_HEADER.size)
        values = np.frombuffer(
            payload, dtype=np.int8, count=n * dim, offset=INT8_HEADER.size + 4 * n
        ).reshape(n, dim)
        return Matrix(encoding, values, scales)
    raise ValueError(f"no embedding layout for encoding {encoding.label}")


def read_int8_header(payload: memoryview) -> tuple[int, int]:
    version, kind = INT8_HEADER.unpack_from(payload, 0)
    return int(version), int(kind)
