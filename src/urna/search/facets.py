"""Facet counts: how many of the chunks a query matched hold each value of a field.

Counted over every chunk that matches in text mode (each chunk with a BM25 score above 0
that the filters keep), and over the ranked candidate pool in vector and hybrid modes
(every chunk either method returned before fusion cut it to k: a vector ranking has no
"matching" set), as the result says (``over``). Fields: any metadata field the corpus
holds (a list field counts each of its values), and the built-ins ``source``, ``folder``
(the source's folder, ``.`` at the top) and ``section``. At most ``TOP`` values a field,
the most frequent first (ties by value).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from urna.errors import QueryError

TOP = 20
BUILT_INS = ("folder", "source", "section")
MAX_FACETS = 16
Counts = dict[str, Counter[Any]]


def check_facets(names: Sequence[str], schema: dict[str, dict[str, int]]) -> None:
    """Refuse a facet on a field no chunk holds, naming the ones that exist."""
    if len(names) > MAX_FACETS:
        raise QueryError(f"at most {MAX_FACETS} facets, got {len(names)}")
    known = sorted({*schema, *BUILT_INS})
    for name in names:
        if name not in known:
            raise QueryError(f"unknown facet field {name!r}; known: {', '.join(known)}")


def merged(parts: Sequence[Counts]) -> Counts:
    out: Counts = {}
    for part in parts:
        for name, counts in part.items():
            out.setdefault(name, Counter()).update(counts)
    return out


def facets_of(
    names: Sequence[str],
    ordinals: np.ndarray,
    offsets: np.ndarray,
    count: Callable[[int, Sequence[str], np.ndarray], Counts],
) -> Counts:
    """Counts over ``ordinals`` (global), each shard counting its own (``count(s, names,
    local ordinals)``), ``offsets`` the shards' first global ordinals."""
    ordinals = np.sort(np.asarray(ordinals, dtype=np.int64))
    parts = []
    for s in range(len(offsets) - 1):
        lo, hi = np.searchsorted(ordinals, [offsets[s], offsets[s + 1]])
        if hi > lo:
            parts.append(count(s, names, ordinals[lo:hi] - offsets[s]))
    return merged(parts)


def shaped(counts: Counts, names: Sequence[str], over: str, chunks: int) -> dict[str, Any]:
    """The wire shape: what was counted, then each field's values, the most frequent first."""
    fields = {}
    for name in names:
        found = counts.get(name, Counter())
        ordered = sorted(found.items(), key=lambda kv: (-kv[1], _key(kv[0])))
        fields[name] = [{"value": value, "count": n} for value, n in ordered[:TOP]]
    return {"over": over, "chunks": chunks, "fields": fields}


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
