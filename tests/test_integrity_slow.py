"""Slow tier: single-byte flips over every dtype and encoding, not only the minimal file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import urna
from urna.errors import FormatError


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
@pytest.mark.parametrize("compression", [None, "zstd"])
def test_every_byte_flip_is_refused(
    random_file: Callable[..., Path], dtype: str, compression: str | None
) -> None:
    source = random_file(n=20, dim=8, dtype=dtype, compression=compression)
    data = source.read_bytes()
    path = source.with_name("flipped.urna")
    for pos in range(len(data)):
        bad = bytearray(data)
        bad[pos] ^= 0x10
        path.write_bytes(bad)
        with pytest.raises(FormatError):
            urna.open(path)
    for length in range(0, len(data), 7):
        path.write_bytes(data[:length])
        with pytest.raises(FormatError):
            urna.open(path)
