"""One file's metadata as a filter reads it: the stored fields (0x11, ``format/fields.py``)
and the built-ins ``source`` (source_uri), ``section`` (section path, where the chunk has one)
and ``page`` (where the source is paged); each condition becomes a mask over the chunks."""

from __future__ import annotations

import posixpath
from collections import Counter
from functools import cached_property
from typing import Any

import numpy as np

from urna.format.chunks import ChunkStore
from urna.format.fields import ChunkFields, Value, type_of
from urna.search.where import Leaf, holds

BUILT_IN = ("source", "section", "page")


class FieldColumns:
    def __init__(self, store: ChunkStore, fields: ChunkFields | None) -> None:
        self._store = store
        self._fields = fields
        self.n = store.n

    def record(self, i: int) -> dict[str, Value]:
        """Chunk ``i``'s stored fields (the built-ins are on the hit itself)."""
        if self._fields is None:
            return {}
        return dict(self._fields.records[int(self._fields.of_chunk[i])])

    def column(self, name: str) -> tuple[list[Value | None], np.ndarray]:
        """Field ``name`` as each distinct record holds it (None where absent), and each
        chunk's record (index ``len(values)`` for all chunks of a file without fields)."""
        if self._fields is None:
            return [], np.zeros(self.n, dtype=np.int64)
        values = [r.get(name) for r in self._fields.records]
        return values, np.asarray(self._fields.of_chunk, dtype=np.int64)

    @cached_property
    def schema(self) -> dict[str, dict[str, int]]:
        """Every field with the chunks holding each of its types."""
        return self.schema_of(None)

    def schema_of(self, dead: np.ndarray | None) -> dict[str, dict[str, int]]:
        """The schema of the live chunks (``dead``: a mask of those a collection deletes)."""
        live = np.ones(self.n, dtype=bool) if dead is None else ~dead
        out: dict[str, dict[str, int]] = {"source": {"string": int(live.sum())}}
        paths = self._store.section_paths
        sections = sum(1 for i, p in enumerate(paths) if p and live[i])
        if sections:
            out["section"] = {"string": sections}
        pages = int(np.count_nonzero(self._pages[live]))
        if pages:
            out["page"] = {"integer": pages}
        if self._fields is not None:
            of_chunk = np.asarray(self._fields.of_chunk)[live]
            per_record = np.bincount(of_chunk, minlength=len(self._fields.spans))
            for record, count in zip(self._fields.records, per_record.tolist(), strict=True):
                for name, value in record.items():
                    if name in BUILT_IN or not count:
                        continue
                    kinds = out.setdefault(name, {})
                    kind = type_of(value)
                    kinds[kind] = kinds.get(kind, 0) + count
        return out

    def counts(self, name: str, ordinals: np.ndarray) -> Counter[Any]:
        """How many of these chunks hold each value of field ``name`` (a list field counts
        each of its values; ``folder`` is the source's folder)."""
        if name in ("source", "folder", "section"):
            values = (
                self._store.source_uris_of(ordinals)
                if name != "section"
                else [self._store.section_paths[i] for i in ordinals.tolist()]
            )
            if name == "folder":
                values = [posixpath.dirname(v.partition("#")[0]) or "." for v in values]
            return Counter(v for v in values if v)
        out: Counter[Any] = Counter()
        if self._fields is None or not len(ordinals):
            return out
        of_chunk = np.asarray(self._fields.of_chunk)[ordinals]
        per_record = np.bincount(of_chunk, minlength=len(self._fields.records))
        for record, n in zip(self._fields.records, per_record.tolist(), strict=True):
            if n and name in record:
                value = record[name]
                for v in value if isinstance(value, list) else [value]:
                    out[v] += n
        return out

    @property
    def _pages(self) -> np.ndarray:
        return self._store.pages

    def mask(self, leaf: Leaf) -> np.ndarray:
        """The chunks that pass one condition."""
        if leaf.field == "source":
            return _by_value(leaf, self._store.source_uris)
        if leaf.field == "section":
            return _by_value(leaf, self._store.section_paths, absent="")
        if leaf.field == "page":
            pages = self._pages
            out = np.zeros(self.n, dtype=bool)
            for page in np.unique(pages).tolist():
                out[pages == page] = holds(leaf, page > 0, int(page))
            return out
        if self._fields is None:
            return np.full(self.n, holds(leaf, False, None))
        per_record = np.array(
            [holds(leaf, leaf.field in r, r.get(leaf.field)) for r in self._fields.records],
            dtype=bool,
        )
        return per_record[self._fields.of_chunk] if len(per_record) else np.zeros(self.n, bool)


def _by_value(leaf: Leaf, values: list[str], absent: Any = None) -> np.ndarray:
    verdict: dict[str, bool] = {}
    out = np.empty(len(values), dtype=bool)
    for i, value in enumerate(values):
        ok = verdict.get(value)
        if ok is None:
            ok = verdict[value] = holds(leaf, value != absent, value)
        out[i] = ok
    return out
