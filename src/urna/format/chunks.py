"""The stored chunks of an open file: each one's identity, text, span and place in its source,
its metadata fields and its stored vector. Search reads hits from it; a build reads earlier
files through it (their chunks to rewrite, their vectors to reuse), never as searchable
corpora."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from urna.format.fields import Value
from urna.format.identity import citation_id
from urna.format.reader import Container


@dataclass(frozen=True)
class Chunk:
    """A stored chunk: its place in the file, its identity, its text and its source span."""

    ordinal: int  # 0-based position in the file
    chunk_id: str
    text: str
    source_uri: str
    byte_start: int
    byte_end: int
    citation_id: str
    section_path: str = ""
    page: int = 0
    source_ordinal: int = 0  # 1-based position within its source, 0 if the file does not say


class ChunkStore:
    """Chunk access over a container's decoded sections (nothing copied up front)."""

    def __init__(self, container: Container) -> None:
        self._c = container
        self.n = container.header.n_chunks

    @property
    def content_hash(self) -> str:
        return self._c.content_hash

    def chunk_id(self, i: int) -> str:
        return self._c.chunk_id_rows[i].tobytes().decode("ascii")

    def chunk(self, i: int) -> Chunk:
        if not 0 <= i < self.n:
            raise IndexError(f"chunk ordinal {i} out of range [0, {self.n})")
        cid = self.chunk_id(i)
        spans, meta = self._c.spans, self._c.chunk_meta
        extra: dict[str, Any] = (
            {
                "section_path": meta.section_paths[i],
                "page": int(meta.pages[i]),
                "source_ordinal": int(meta.source_ordinals[i]),
            }
            if meta is not None
            else {}
        )
        return Chunk(
            ordinal=i,
            chunk_id=cid,
            text=self._c.texts[i],
            source_uri=spans.uris[i],
            byte_start=int(spans.byte_start[i]),
            byte_end=int(spans.byte_end[i]),
            citation_id=citation_id(self.content_hash, cid),
            **extra,
        )

    def fields_of(self, i: int) -> dict[str, Value]:
        """Chunk ``i``'s stored metadata fields ({} where the file has none)."""
        fields = self._c.chunk_fields
        if fields is None:
            return {}
        return dict(fields.records[int(fields.of_chunk[i])])

    def embedding(self, i: int) -> np.ndarray:
        """Row ``i`` as stored, dequantized to float32."""
        return self._c.matrix.rows(slice(i, i + 1))[0]

    def source_uris_of(self, idx: np.ndarray) -> list[str]:
        uris = self._c.spans.uris
        return [uris[int(i)] for i in idx]

    def text_bytes(self, i: int) -> bytes:
        return self._c.texts.raw(i)

    def find(self, chunk_id: str) -> int | None:
        """The ordinal of a chunk id, or None."""
        target = np.frombuffer(chunk_id.encode("ascii", "replace"), dtype=np.uint8)
        rows = self._c.chunk_id_rows
        if len(target) != rows.shape[1]:
            return None
        # First a cheap filter on 8 bytes of the hex digest, then an exact compare.
        probe = np.flatnonzero(np.all(rows[:, 7:15] == target[7:15], axis=1))
        for i in probe:
            if np.array_equal(rows[i], target):
                return int(i)
        return None

    @cached_property
    def source_uris(self) -> list[str]:
        """Every chunk's source_uri, in file order (decoded once, for filters)."""
        uris = self._c.spans.uris
        return [uris[i] for i in range(self.n)]

    @cached_property
    def pages(self) -> np.ndarray:
        """Every chunk's page (0 where the source is not paged), in file order."""
        meta = self._c.chunk_meta
        return np.zeros(self.n, np.int64) if meta is None else meta.pages.astype(np.int64)

    @cached_property
    def section_paths(self) -> list[str]:
        """Every chunk's section path, in file order ("" where the file has none)."""
        meta = self._c.chunk_meta
        if meta is None:
            return [""] * self.n
        return [meta.section_paths[i] for i in range(self.n)]
