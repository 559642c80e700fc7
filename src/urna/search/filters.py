"""What a query keeps, applied before ranking: a pattern on the source path (``--source``,
``ingest/globs.py``), a prefix of the section path (``--section``), a where-filter on
metadata (``--where``, ``search/where.py``) and the phrases and words the query language
requires or excludes (``search/syntax.py``, ``search/words.py``). A filtered search ranks
only the chunks the filter keeps, so it returns k hits whenever k such chunks exist (and,
for BM25, match)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from urna.errors import QueryError
from urna.ingest.globs import MAX_PATTERN, PathGlob
from urna.search.metadata import FieldColumns
from urna.search.where import Group, Leaf, Negation, Node, Schema, check, parse_where
from urna.search.words import TextRule, Words


@dataclass(frozen=True)
class Filter:
    """``source``: a path pattern; ``section``: a section-path prefix (``Guide / Install``);
    ``where``: a parsed where-filter. All that are given must hold."""

    source: PathGlob | None = None
    section: str | None = None
    where: Node | None = None
    text: TextRule | None = None

    @property
    def active(self) -> bool:
        return (
            self.source is not None
            or self.section is not None
            or self.where is not None
            or self.text is not None
        )

    def check(self, schema: Schema) -> None:
        if self.where is not None:
            check(self.where, schema)


def make_filter(
    source: str | None = None,
    section: str | None = None,
    where: str | Mapping[str, Any] | None = None,
) -> Filter | None:
    """A filter, or None when nothing is given (an empty string counts as not given)."""
    if section is not None:
        if not isinstance(section, str):
            raise QueryError("invalid section filter: expected a string")
        if len(section) > MAX_PATTERN:
            raise QueryError(f"section filter of {len(section)} characters, at most {MAX_PATTERN}")
    if source is not None and not isinstance(source, str):
        raise QueryError("invalid source filter: expected a string")
    made = Filter(_glob(source) if source else None, section or None, parse_where(where))
    return made if made.active else None


@lru_cache(maxsize=64)
def _glob(pattern: str) -> PathGlob:
    return PathGlob(pattern)  # compiled once per pattern, not once per query


class FilterIndex:
    """The ordinals each filter keeps in one file, computed once per filter (16 kept)."""

    KEPT = 16  # bounded: filters come from requests too; each entry is up to 8 bytes a chunk

    def __init__(self, columns: FieldColumns, words: Words | None = None) -> None:
        self._columns = columns
        self._words = words
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def allowed(self, kept: Filter | None) -> np.ndarray | None:
        """Sorted ordinals the filter keeps, or None for no filter (every chunk)."""
        if kept is None or not kept.active:
            return None
        # Keyed by the repr, which tells 1, 1.0 and true apart (equal as Python values).
        key = repr(kept)
        with self._lock:
            found = self._recent.get(key)
            if found is not None:
                self._recent.move_to_end(key)
                return found
        found = self._compute(kept)
        with self._lock:
            self._recent[key] = found
            while len(self._recent) > self.KEPT:
                self._recent.popitem(last=False)
        return found

    def _compute(self, kept: Filter) -> np.ndarray:
        cols = self._columns
        keep = np.ones(cols.n, dtype=bool)
        if kept.source is not None:
            keep &= cols.mask(Leaf("source", "$glob", kept.source))
        if kept.section is not None:
            keep &= cols.mask(Leaf("section", "$prefix", kept.section))
        if kept.where is not None:
            keep &= self._mask(kept.where)
        if kept.text is not None and self._words is not None:
            keep &= self._words.mask(kept.text, np.flatnonzero(keep))
        out = np.flatnonzero(keep)
        out.flags.writeable = False
        return out

    def _mask(self, node: Node) -> np.ndarray:
        if isinstance(node, Leaf):
            return self._columns.mask(node)
        if isinstance(node, Negation):
            return ~self._mask(node.part)
        assert isinstance(node, Group)
        masks = [self._mask(part) for part in node.parts]
        out = masks[0].copy()
        for m in masks[1:]:
            if node.op == "$and":
                out &= m
            else:
                out |= m
        return out
