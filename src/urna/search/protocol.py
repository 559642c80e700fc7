"""What every searchable corpus offers: a single .urna file (``Corpus``) today, and any other
kind (a collection of shard files) that implements the same methods. The shells (CLI, HTTP,
evaluation) are written against this protocol, not against one class."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from urna.format.audit import AuditReport
from urna.search.chunks import Chunk
from urna.search.cite import Citation
from urna.search.result import SearchResult

Vector = Sequence[float] | np.ndarray


class Searchable(Protocol):
    """Search, cite and describe a corpus. Every method raises an ``UrnaError`` on bad input."""

    @property
    def path(self) -> Path: ...

    @property
    def n_chunks(self) -> int: ...

    @property
    def dim(self) -> int: ...

    @property
    def model(self) -> str: ...

    @property
    def file_hash(self) -> str: ...

    @property
    def content_hash(self) -> str: ...

    @property
    def index_type(self) -> str: ...

    @property
    def has_text_index(self) -> bool:
        """Whether text (BM25) search is available."""

    @property
    def has_ann_index(self) -> bool: ...

    @property
    def has_graph_index(self) -> bool: ...

    def chunk(self, i: int) -> Chunk:
        """The chunk at position ``i`` (0-based, file order)."""

    def embedding(self, i: int) -> np.ndarray:
        """Chunk ``i``'s vector as stored, dequantized to float32."""

    def search(
        self, query: Vector, k: int = 10, *, source: str | None = None, section: str | None = None
    ) -> SearchResult: ...

    def search_ann(
        self,
        query: Vector,
        k: int = 10,
        *,
        ef: int = 100,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult: ...

    def search_graph(
        self,
        query: Vector,
        k: int = 10,
        *,
        hops: int = 1,
        ef: int = 100,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult: ...

    def search_space(
        self,
        query: Vector,
        space: str,
        k: int = 10,
        *,
        expect_model_hash: str | None = None,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult: ...

    def search_text(
        self,
        text: str,
        k: int = 10,
        *,
        mode: str = "auto",
        fusion: str | None = None,
        candidates: int | None = None,
        model_path: str | os.PathLike[str] | None = None,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult: ...

    def cite(self, citation: str | Citation) -> Chunk: ...

    def verify_source(self, chunk: Chunk, root: str | os.PathLike[str] | None = None) -> Path: ...

    def info(self) -> dict[str, Any]: ...

    def validate(self) -> AuditReport: ...

    def close(self) -> None: ...

    def __enter__(self) -> Searchable: ...

    def __exit__(self, *exc: object) -> None: ...
