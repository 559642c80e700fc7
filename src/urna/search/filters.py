"""Filters on where a chunk comes from, applied before ranking: a glob on its source_uri and a
prefix of its section path. A filtered search ranks only the chunks the filter keeps, so it
returns k hits whenever k such chunks exist (and, for BM25, match the query)."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache

import numpy as np

from urna.errors import QueryError
from urna.search.chunks import ChunkStore

MAX_PATTERN = 500


@dataclass(frozen=True)
class Filter:
    """``source``: a glob (``*``, ``?``, ``[...]``) matched against the whole source_uri, case
    sensitive; ``section``: a prefix of the section path (``Guide / Install``)."""

    source: str | None = None
    section: str | None = None

    def __post_init__(self) -> None:
        for name in ("source", "section"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, str) or not value:
                raise QueryError(f"invalid {name} filter: expected a non-empty string")
            if len(value) > MAX_PATTERN:
                raise QueryError(f"{name} filter of {len(value)} characters, at most {MAX_PATTERN}")

    @property
    def active(self) -> bool:
        return self.source is not None or self.section is not None

    def keeps(self, source_uri: str, section_path: str) -> bool:
        return (self.source is None or fnmatchcase(source_uri, self.source)) and (
            self.section is None or section_path.startswith(self.section)
        )


def make_filter(source: str | None = None, section: str | None = None) -> Filter | None:
    """A filter, or None when neither part is given (an empty string counts as not given)."""
    made = Filter(source or None, section or None)
    return made if made.active else None


class FilterIndex:
    """The ordinals each filter keeps, computed once per filter (the 16 latest are kept)."""

    def __init__(self, store: ChunkStore) -> None:
        self._store = store
        # Bounded: filters come from requests too; each entry is up to 8 bytes per chunk.
        self._allowed = lru_cache(maxsize=16)(self._compute)

    def allowed(self, where: Filter | None) -> np.ndarray | None:
        """Sorted ordinals the filter keeps, or None for no filter (every chunk)."""
        if where is None or not where.active:
            return None
        return self._allowed(where)

    def _compute(self, where: Filter) -> np.ndarray:
        uris, paths = self._store.source_uris, self._store.section_paths
        verdict: dict[tuple[str, str], bool] = {}
        keep = np.zeros(self._store.n, dtype=bool)
        for i, key in enumerate(zip(uris, paths, strict=True)):
            ok = verdict.get(key)
            if ok is None:
                ok = verdict[key] = where.keeps(*key)
            keep[i] = ok
        out = np.flatnonzero(keep)
        out.flags.writeable = False
        return out
