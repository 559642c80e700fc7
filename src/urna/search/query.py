"""Vector queries: parse the JSON array, validate it, L2-normalize it."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from urna.errors import QueryError


def parse_vector(text: str) -> list[float]:
    """Parse a query given as a JSON array of numbers (NaN and Inf are caught later)."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise QueryError(f"invalid query JSON: {detail}") from None
    if not isinstance(value, list):
        raise QueryError(f"invalid query JSON: expected an array of numbers, got {_kind(value)}")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise QueryError(f"invalid query JSON: element {i} is {_kind(item)}, not a number")
        try:
            out.append(float(item))
        except OverflowError:
            out.append(math.copysign(math.inf, item))
    return out


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def prepare(values: Sequence[float] | np.ndarray, dim: int) -> np.ndarray:
    """Validate a query vector against the file's dimension and return it L2-normalized."""
    try:
        vec = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise QueryError("invalid query: expected a flat list of numbers") from None
    if vec.ndim != 1:
        raise QueryError(f"invalid query: expected a flat list of numbers, got shape {vec.shape}")
    if vec.size == 0:
        raise QueryError("empty query")
    if vec.size != dim:
        raise QueryError(f"dimension mismatch: expected {dim}, got {vec.size}")
    if not np.all(np.isfinite(vec)):
        raise QueryError("NaN or Inf in query")
    # Scale first so that squaring huge finite values cannot overflow.
    peak = float(np.max(np.abs(vec)))
    if peak == 0.0:
        raise QueryError("zero-norm query")
    scaled = vec / peak
    return (scaled / np.linalg.norm(scaled)).astype(np.float32)


class GivenVector:
    """A text query's vector side given by the caller (``Query(text=..., vector=...)``): a
    program that embeds its queries elsewhere runs hybrid with no model loaded here. It
    stands in for the corpus's model and returns the caller's vector for any text; which
    model made it is the caller's word (it must be the corpus's), so only its dimension and
    values are checked."""

    precision = "float32"
    batching = ""
    max_tokens = 0

    def __init__(self, vector: Sequence[float] | np.ndarray, model_hash: str, dim: int) -> None:
        self._vector = prepare(vector, dim)
        self.model_hash, self.dim = model_hash, dim

    @property
    def name(self) -> str:
        return "the caller's vector"

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [0] * len(texts)

    def load(self) -> None:
        return None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(self._vector, (len(texts), 1))
