"""Hit assembly: ranked ordinals and scores become ``Hit``s, each with its citation."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from urna.search.chunks import ChunkStore
from urna.search.metadata import FieldColumns
from urna.search.result import Hit
from urna.search.shard import HitSpec
from urna.search.snippet import plain, snippet


class HitMaker:
    """Turns (ordinals, scores) into hits for one file; the file's hashes are read once."""

    def __init__(
        self, store: ChunkStore, columns: FieldColumns, model: str, file_hash: Callable[[], str]
    ) -> None:
        self._store = store
        self._columns = columns
        self._model = model
        self._file_hash = file_hash

    def __call__(self, idx: np.ndarray, scores: np.ndarray, spec: HitSpec) -> list[Hit]:
        content, fh = self._store.content_hash, self._file_hash()
        ranks, terms, offset = spec.ranks, spec.terms, spec.offset
        at = range(1, len(idx) + 1) if spec.at is None else spec.at
        hits = []
        for j, (i, score) in enumerate(zip(idx.tolist(), scores.tolist(), strict=True)):
            c = self._store.chunk(i)
            hits.append(
                Hit(
                    rank=at[j],
                    ordinal=i + offset,
                    chunk_id=c.chunk_id,
                    score=float(score),
                    score_type=spec.score_type,
                    source_uri=c.source_uri,
                    byte_start=c.byte_start,
                    byte_end=c.byte_end,
                    text=c.text,
                    model=spec.model or self._model,
                    index_type=spec.index_type,
                    reranked=spec.reranked,
                    file_hash=fh,
                    content_hash=content,
                    citation_id=c.citation_id,
                    section_path=c.section_path,
                    page=c.page,
                    source_ordinal=c.source_ordinal,
                    ranks=ranks[j] if ranks is not None else {},
                    snippet="" if terms is None else snippet(plain(c.text, c.source_uri), terms),
                    precision=spec.precision,
                    metadata=self._columns.record(i),
                )
            )
        return hits
