"""A query as one value: what it asks (text or a vector), how (the method, the mode and its
knobs) and over what (the filter). Every shell builds a ``Query`` and hands it whole to the
core (``search/core.py``); nothing between them lists its parameters again."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

import numpy as np

from urna.embed.base import Embedder
from urna.errors import QueryError
from urna.format.fusion import FUSIONS
from urna.search.filters import Filter, make_filter

Method = Literal["exact", "ann", "graph", "space", "text"]
METHODS: tuple[str, ...] = get_args(Method)
Mode = Literal["auto", "hybrid", "vector", "text"]
MODES: tuple[str, ...] = get_args(Mode)
Group = Literal["document"]
GROUPS: tuple[str, ...] = get_args(Group)


@dataclass(frozen=True)
class Query:
    """One search. ``method``: ``text`` (a text query in ``mode`` auto, hybrid, vector or
    text), or a vector query: ``exact``, ``ann`` (HNSW, ``ef``), ``graph`` (``hops``,
    ``ef``), ``space`` (one named embedding space). ``source`` (a path pattern),
    ``section`` (a section-path prefix) and ``where`` (a where-filter, JSON text or object)
    keep chunks before ranking."""

    text: str | None = None
    vector: Sequence[float] | np.ndarray | None = field(default=None, compare=False)
    k: int = 10
    method: str = "text"
    mode: str = "auto"
    fusion: str | None = None
    candidates: int | None = None
    ef: int = 100
    hops: int = 1
    space: str | None = None
    expect_model_hash: str | None = None
    source: str | None = None
    section: str | None = None
    where: str | Mapping[str, Any] | None = field(default=None, compare=False)
    model_path: str | os.PathLike[str] | None = None
    embedder: Embedder | None = field(default=None, compare=False)
    group: str | None = None  # "document": the best chunk of each of k documents
    facets: tuple[str, ...] | str = ()  # fields whose values are counted among what matched
    typos: bool = True  # a word the corpus does not hold read as its nearest (``typos.py``)
    lang: str | None = None  # the query's language, where each document has its own
    vector_index: str = "exact"  # hybrid's vector side: every chunk, or "ann" (HNSW, ``ef``)

    def __post_init__(self) -> None:
        """Every knob checked here, once, whichever shell built the query."""
        if self.method not in METHODS:
            raise QueryError(
                f"invalid method {self.method!r}: expected one of {', '.join(METHODS)}"
            )
        if self.mode not in MODES:
            raise QueryError(f"invalid mode {self.mode!r}: expected one of {', '.join(MODES)}")
        if self.fusion is not None and self.fusion not in FUSIONS:
            raise QueryError(
                f"invalid fusion {self.fusion!r}: expected one of {', '.join(FUSIONS)}"
            )
        object.__setattr__(self, "k", _positive(self.k, "k"))
        object.__setattr__(self, "ef", _positive(self.ef, "ef"))
        if self.candidates is not None:
            object.__setattr__(self, "candidates", _positive(self.candidates, "candidates"))
        if isinstance(self.hops, bool) or not isinstance(self.hops, int) or self.hops < 0:
            raise QueryError(f"invalid hops: {self.hops}")
        if self.method != "text" and self.vector is None:
            raise QueryError(f"method {self.method} needs a query vector")
        if self.vector_index not in ("exact", "ann"):
            raise QueryError(f"invalid vector_index {self.vector_index!r}: expected exact or ann")
        if self.lang is not None:
            object.__setattr__(self, "lang", _language(self.lang))
        if self.facets is None:
            object.__setattr__(self, "facets", ())
        if isinstance(self.facets, str):
            object.__setattr__(self, "facets", tuple(f for f in self.facets.split(",") if f))
        if not all(isinstance(f, str) and f for f in self.facets):
            raise QueryError("invalid facets: expected field names")
        object.__setattr__(self, "facets", tuple(dict.fromkeys(self.facets)))
        if self.group not in (None, *GROUPS):
            raise QueryError(f"invalid group {self.group!r}: expected one of {', '.join(GROUPS)}")
        if self.method == "space" and (not isinstance(self.space, str) or not self.space):
            raise QueryError("search_space needs the name of an embedding space")

    def kept(self) -> Filter | None:
        """What the query keeps (parsed and checked for syntax; None: every chunk)."""
        return make_filter(self.source, self.section, self.where)


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise QueryError(f"invalid {name}: {value}")
    return int(value)


QUERY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Query))


def query_from(**given: Any) -> Query:
    """A query from named parts (a shell's options), refusing a name that is not a part."""
    unknown = sorted(set(given) - set(QUERY_FIELDS))
    if unknown:
        raise QueryError(f"unknown query parameter {unknown[0]!r}")
    return Query(**given)


def _language(value: object) -> str:
    """A query's ``lang``: a language BM25 reads (``index/languages.py``), lowercased."""
    from urna.index.languages import KNOWN, code_of

    code = code_of(value)
    if code is None:
        raise QueryError(f"invalid lang {value!r}: expected one of {KNOWN}")
    return code
