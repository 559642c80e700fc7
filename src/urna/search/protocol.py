"""What every searchable corpus offers: a single .urna file (``Corpus``) and a collection of
shard files (``Collection``), peers over the one search core. The shells (CLI, HTTP, MCP,
evaluation) are written against this protocol: they build a ``Query`` and ``run`` it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from urna.format.audit import AuditReport
from urna.format.chunks import Chunk
from urna.search.cite import Citation
from urna.search.request import Query
from urna.search.result import SearchResult


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

    def source_uris(self, ordinals: np.ndarray) -> list[str]:
        """The source_uri of each of these ordinals (no text decoded)."""

    def live_ordinals(self) -> np.ndarray:
        """The ordinals of the chunks that count, ascending (a collection's catalog may
        delete some: ordinals run over every stored chunk)."""

    def run(self, query: Query) -> SearchResult:
        """One query, whole, through the search core."""

    def fields(self) -> dict[str, dict[str, int]]:
        """Every metadata field, with how many chunks hold each of its types."""

    def cite(self, citation: str | Citation) -> Chunk: ...

    def verify_source(self, chunk: Chunk, root: str | os.PathLike[str] | None = None) -> Path: ...

    def info(self) -> dict[str, Any]: ...

    def validate(self) -> AuditReport: ...

    def close(self) -> None: ...

    def __enter__(self) -> Searchable: ...

    def __exit__(self, *exc: object) -> None: ...
