"""Read pre-chunked, pre-embedded input: one JSON object a line.

Each line: ``{"text": ..., "source_uri": ..., "byte_start": N, "byte_end": N,
"embedding": [...]}``, and optionally ``"metadata": {...}`` (typed as a JSONL record's fields
are, ``ingest/metadata.py``). Blank lines are skipped; every problem names its line.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from urna.errors import BuildError, FileError
from urna.format.regular import NotRegular, describe, open_regular
from urna.ingest.metadata import typed

FIELDS = ("text", "source_uri", "byte_start", "byte_end", "embedding")


@dataclass(frozen=True)
class VectorChunks:
    texts: list[str]
    source_uris: list[str]
    byte_starts: list[int]
    byte_ends: list[int]
    embeddings: np.ndarray
    lines: list[int]  # the source line of each chunk, for messages
    fields: list[dict[str, Any]] = field(default_factory=list)

    def chunks(self) -> list[dict[str, object]]:
        fields = self.fields or [{}] * len(self.texts)
        return [
            {"text": t, "source_uri": u, "byte_start": s, "byte_end": e, "metadata": m}
            for t, u, s, e, m in zip(
                self.texts, self.source_uris, self.byte_starts, self.byte_ends, fields, strict=True
            )
        ]


def _int(value: object, name: str, line: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BuildError(f"line {line}: {name} must be a non-negative integer, got {value!r}")
    return value


MAX_LINE = 64 << 20  # characters in one JSONL line (a chunk and its vector)


def read_chunks_jsonl(path: str | os.PathLike[str], dim: int) -> VectorChunks:
    p = Path(path)
    try:
        fd = open_regular(p)  # a FIFO or a device (/dev/zero) is refused, never read
    except NotRegular as exc:
        raise FileError(f"not a file: {exc}") from None
    except FileNotFoundError:
        raise FileError(f"file not found: {p}") from None
    except OSError as exc:
        raise FileError(describe(p, exc)) from None
    texts: list[str] = []
    uris: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    rows: list[list[float]] = []
    lines: list[int] = []
    fields: list[dict[str, Any]] = []
    with open(fd, encoding="utf-8") as handle:
        try:
            for number, raw in enumerate(iter(lambda: handle.readline(MAX_LINE + 1), ""), 1):
                if len(raw) > MAX_LINE:
                    raise BuildError(f"line {number}: longer than {MAX_LINE} characters")
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise BuildError(f"line {number}: invalid JSON: {exc.msg}") from None
                if not isinstance(obj, dict):
                    raise BuildError(f"line {number}: expected a JSON object")
                missing = [f for f in FIELDS if f not in obj]
                if missing:
                    raise BuildError(f"line {number}: missing field {missing[0]!r}")
                text, uri = obj["text"], obj["source_uri"]
                if not isinstance(text, str) or not text:
                    raise BuildError(f"line {number}: text must be a non-empty string")
                if not isinstance(uri, str) or not uri:
                    raise BuildError(f"line {number}: source_uri must be a non-empty string")
                start = _int(obj["byte_start"], "byte_start", number)
                end = _int(obj["byte_end"], "byte_end", number)
                if end < start:
                    raise BuildError(f"line {number}: byte_end {end} is before byte_start {start}")
                vec = obj["embedding"]
                if not isinstance(vec, list) or not all(
                    isinstance(x, int | float) and not isinstance(x, bool) for x in vec
                ):
                    raise BuildError(f"line {number}: embedding must be an array of numbers")
                if len(vec) != dim:
                    raise BuildError(
                        f"line {number}: dimension mismatch: expected {dim}, got {len(vec)}"
                    )
                if not all(math.isfinite(x) for x in vec):
                    raise BuildError(f"line {number}: embedding holds NaN or Inf")
                meta = obj.get("metadata", {})
                if not isinstance(meta, dict):
                    raise BuildError(f"line {number}: metadata must be a JSON object")
                fields.append(typed(meta, strings_as_dates=True))
                texts.append(text)
                uris.append(uri)
                starts.append(start)
                ends.append(end)
                rows.append(vec)
                lines.append(number)
        except UnicodeDecodeError as exc:
            raise BuildError(f"{p} is not valid UTF-8 (byte {exc.start})") from None
    if not rows:
        raise BuildError(f"{p} holds no chunks")
    matrix = np.asarray(rows, dtype=np.float64).reshape(len(rows), dim)
    return VectorChunks(texts, uris, starts, ends, matrix, lines, fields)
