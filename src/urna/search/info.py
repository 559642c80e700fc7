"""What an open file is: its identity, manifest, sections and spaces, as every shell shows it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urna.format.embeddings import Matrix
from urna.format.layout import REQUIRED_SECTIONS
from urna.format.manifest import PLACEHOLDER_MODEL_HASH
from urna.format.reader import Container, Verify
from urna.format.spaces import Space
from urna.index.bm25 import BM25Index
from urna.index.graph import ChunkGraph
from urna.index.hnsw import HNSWIndex


@dataclass(frozen=True)
class Section:
    """One entry of the section table."""

    id: int
    name: str
    encoding: str
    offset: int
    size: int
    checksum: str


class FileView:
    """The facts of an open .urna file (the base of ``Corpus``)."""

    _bm25: BM25Index | None
    _hnsw: HNSWIndex | None
    _graph: ChunkGraph | None

    def __init__(self, container: Container) -> None:
        self._c = container
        self.manifest: dict[str, Any] = dict(container.manifest)

    @property
    def path(self) -> Path:
        return self._c.path

    @property
    def container(self) -> Container:
        """The open container (a watching server lends it to its writer's next update)."""
        return self._c

    @property
    def n_chunks(self) -> int:
        return int(self.manifest["n_chunks"])

    @property
    def dim(self) -> int:
        return int(self.manifest["embedding_dim"])

    @property
    def model(self) -> str:
        return str(self.manifest["embedding_model"])

    @property
    def model_hash(self) -> str:
        return str(self.manifest["model_hash"])

    @property
    def has_placeholder_model_hash(self) -> bool:
        return self.model_hash == PLACEHOLDER_MODEL_HASH

    @property
    def dtype(self) -> str:
        return str(self.manifest["dtype"])

    @property
    def index_type(self) -> str:
        return str(self.manifest["index_type"])

    @property
    def size(self) -> int:
        return self._c.size

    @property
    def file_hash(self) -> str:
        return self._c.file_hash

    @property
    def content_hash(self) -> str:
        return self._c.content_hash

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self._c.provenance)

    @property
    def search_contract(self) -> dict[str, Any]:
        return dict(self._c.search_contract)

    @property
    def verified(self) -> Verify:
        return self._c.verify

    @property
    def has_text_index(self) -> bool:
        """Whether the file has a BM25 index (text search)."""
        return self._bm25 is not None

    @property
    def has_ann_index(self) -> bool:
        """Whether the file has an HNSW index (search_ann is approximate, then reranked)."""
        return self._hnsw is not None

    @property
    def has_graph_index(self) -> bool:
        """Whether the file has a usable chunk graph (search_graph expands over it)."""
        return self._graph is not None

    @property
    def bm25(self) -> BM25Index | None:
        return self._bm25

    @property
    def hnsw(self) -> HNSWIndex | None:
        return self._hnsw

    @property
    def graph(self) -> ChunkGraph | None:
        return self._graph

    @property
    def matrix(self) -> Matrix:
        """The stored embeddings, as the exact path scores them."""
        return self._c.matrix

    def sections(self) -> list[Section]:
        return [
            Section(
                id=e.section_id,
                name=e.name,
                encoding=e.encoding.label,
                offset=e.offset,
                size=e.size,
                checksum=e.checksum.hex(),
            )
            for e in sorted(self._c.entries.values(), key=lambda e: e.section_id)
        ]

    def spaces(self) -> list[Space]:
        return list(self._c.spaces)

    def info(self) -> dict[str, Any]:
        """Everything ``urna stats`` and ``urna inspect --json`` show."""
        return {
            "path": str(self.path),
            "file_size": self.size,
            "file_hash": self.file_hash,
            "content_hash": self.content_hash,
            "verified": self.verified,
            "manifest": self.manifest,
            "provenance": self.provenance,
            "search_contract": self.search_contract,
            "sections": [
                {
                    "id": s.id,
                    "id_hex": f"0x{s.id:02X}",
                    "name": s.name,
                    "encoding": s.encoding,
                    "offset": s.offset,
                    "size": s.size,
                    "checksum": s.checksum,
                    "required": s.id in REQUIRED_SECTIONS,
                }
                for s in self.sections()
            ],
            "spaces": [
                {
                    "name": sp.name,
                    "model": sp.model,
                    "model_hash": sp.model_hash,
                    "dim": sp.dim,
                    "section": f"0x{sp.section:02X}",
                }
                for sp in self._c.spaces
            ],
        }
