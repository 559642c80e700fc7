"""A collection: many ordinary .urna files (shards) and a catalog, answering as one file.

Every search asks each shard and merges: exact vectors by score; BM25 in two rounds (each
shard reports its document count, total length and the query terms' document frequencies,
then every shard scores with the collection's statistics, as Elasticsearch's
dfs_query_then_fetch does); hybrid merges each method, then fuses; HNSW and the chunk graph
per shard, reranked exactly, merged. Ordinals are global (shard after shard, in catalog
order); ties break by source_uri, then ordinal (``search/order.py``), as in one file of the
same sources. A hit's
citation names its shard's content_hash; the collection resolves it through the catalog.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from urna.embed.base import Embedder
from urna.embed.gate import check_gate
from urna.embed.registry import resolve_query
from urna.errors import CitationError, FormatError
from urna.format.audit import AuditReport
from urna.format.catalog import Catalog
from urna.format.partition import bucket_of
from urna.index.bm25 import TermStats, TextHits
from urna.index.tokenize import tokenize, tokenizer_for
from urna.search.chunks import Chunk
from urna.search.cite import Citation, parse_citation
from urna.search.corpus import Vector
from urna.search.fusion import FusionParams
from urna.search.merge import merge_hits, merge_top
from urna.search.query import check_k, prepare
from urna.search.result import Hit, SearchResult
from urna.search.shard import Shard
from urna.search.textquery import Candidates, TextSearching


class Collection(TextSearching):
    """A collection folder opened for reading. Create it with :func:`urna.open`."""

    def __init__(
        self, folder: Path, catalog: Catalog, version: str, shards: Sequence[Shard]
    ) -> None:
        self._folder = folder
        self.catalog = catalog
        self.version = version
        self.shards = list(shards)
        self._offsets = np.cumsum([0] + [s.facts.n_chunks for s in self.shards])
        self._by_hash = {s.facts.content_hash: i for i, s in enumerate(self.shards)}
        first = self.shards[0].facts
        self.manifest: dict[str, Any] = first.manifest
        self.fusion: FusionParams = first.fusion

    # --- what it is ----------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._folder

    @property
    def n_chunks(self) -> int:
        return int(self._offsets[-1])

    @property
    def dim(self) -> int:
        return self.catalog.dim

    @property
    def model(self) -> str:
        return self.catalog.model

    @property
    def model_hash(self) -> str:
        return self.catalog.model_hash

    @property
    def file_hash(self) -> str:
        """A collection's identity is its version: the SHA-256 of its catalog."""
        return self.version

    @property
    def content_hash(self) -> str:
        return self.version

    @property
    def index_type(self) -> str:
        return self.shards[0].facts.index_type

    @property
    def has_text_index(self) -> bool:
        return all(s.facts.has_text_index for s in self.shards)

    @property
    def has_ann_index(self) -> bool:
        return all(s.facts.has_ann_index for s in self.shards)

    @property
    def has_graph_index(self) -> bool:
        return all(s.facts.has_graph_index for s in self.shards)

    def _locate(self, i: int) -> tuple[int, int]:
        if not 0 <= i < self.n_chunks:
            raise IndexError(f"chunk ordinal {i} out of range [0, {self.n_chunks})")
        s = int(np.searchsorted(self._offsets, i, side="right")) - 1
        return s, i - int(self._offsets[s])

    def chunk(self, i: int) -> Chunk:
        s, local = self._locate(i)
        return replace(self.shards[s].chunk(local), ordinal=i)

    def embedding(self, i: int) -> np.ndarray:
        s, local = self._locate(i)
        return self.shards[s].embedding(local)

    # --- search --------------------------------------------------------------

    def _offset(self, s: int) -> int:
        return int(self._offsets[s])

    def search(
        self, query: Vector, k: int = 10, *, source: str | None = None, section: str | None = None
    ) -> SearchResult:
        """Exact cosine over every shard (or the chunks the filters keep), merged."""
        t0 = time.perf_counter()
        k = check_k(k)
        q = prepare(query, self.dim)
        where = self.candidates(source, section)
        idx, scores = where.vector_top(q, k)  # merged in the one order
        hits = self.make_hits(idx, scores, index_type="exact")
        elapsed = (time.perf_counter() - t0) * 1000
        return SearchResult("exact", 1.0, k, where.n_searched, elapsed, hits)

    def _merged(self, run: str, k: int, **kwargs: Any) -> SearchResult:
        """Each shard's own search (``run`` names the Corpus method), merged."""
        k = check_k(k)
        results = [shard.search(run, k=k, **kwargs) for shard in self.shards]
        hits = merge_hits([(self._offset(s), r.hits) for s, r in enumerate(results)], k)
        first = results[0]
        total = sum(r.query_time_ms for r in results)
        searched = sum(r.n_searched for r in results)
        return replace(first, hits=hits, n_searched=searched, query_time_ms=total)

    def search_ann(
        self,
        query: Vector,
        k: int = 10,
        *,
        ef: int = 100,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult:
        """Each shard's HNSW candidates, reranked exactly there, merged."""
        return self._merged("search_ann", k, query=query, ef=ef, source=source, section=section)

    def search_graph(
        self,
        query: Vector,
        k: int = 10,
        *,
        hops: int = 1,
        ef: int = 100,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult:
        return self._merged(
            "search_graph", k, query=query, hops=hops, ef=ef, source=source, section=section
        )

    def search_space(
        self,
        query: Vector,
        space: str,
        k: int = 10,
        *,
        expect_model_hash: str | None = None,
        source: str | None = None,
        section: str | None = None,
    ) -> SearchResult:
        return self._merged(
            "search_space",
            k,
            query=query,
            space=space,
            expect_model_hash=expect_model_hash,
            source=source,
            section=section,
        )

    def embedder(self, *, model_path: str | os.PathLike[str] | None = None) -> Embedder:
        found = resolve_query(self.model, model_path=model_path, download=False)
        check_gate(found, self.manifest)
        return found

    def candidates(self, source: str | None, section: str | None) -> Candidates:
        """Each method's best candidates over every shard, merged (ordinals are global)."""
        shards = list(zip(self.shards, self._offsets[:-1].tolist(), strict=True))

        def vector_top(q: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
            parts = []
            for shard, offset in shards:
                idx, scores = shard.vector_top(q, depth, source, section)
                parts.append((idx + offset, scores))
            return merge_top(parts, depth, self.source_uris)

        tokenize_query = tokenizer_for(self.catalog.tokenizer_version or "") or tokenize

        def text_top(text: str, depth: int) -> TextHits:
            tokens = tokenize_query(text)
            stats = TermStats.combine([s.term_stats(tokens) for s, _ in shards])  # round 1
            parts = []
            for shard, offset in shards:  # round 2: every shard scores with the global stats
                idx, scores = shard.text_top(tokens, stats, depth, source, section)
                parts.append((idx + offset, scores))
            idx, scores = merge_top(parts, depth, self.source_uris)
            return TextHits(idx, scores, tokens, stats.idf_sum(tokens))

        searched = sum(s.count(source, section) for s in self.shards)
        text = text_top if self.has_text_index else None
        return Candidates(vector_top, text, searched, self.source_uris)

    def source_uris(self, ordinals: np.ndarray) -> list[str]:
        """The source_uri of each global ordinal (one call per shard holding any)."""
        idx = np.asarray(ordinals, dtype=np.int64)
        owner = np.searchsorted(self._offsets, idx, side="right") - 1
        out = [""] * len(idx)
        for s in np.unique(owner).tolist():
            at = np.flatnonzero(owner == s)
            found = self.shards[s].source_uris(idx[at] - self._offsets[s])
            for j, uri in zip(at.tolist(), found, strict=True):
                out[j] = uri
        return out

    def make_hits(
        self,
        idx: np.ndarray,
        scores: np.ndarray,
        *,
        index_type: str,
        score_type: str = "cosine",
        ranks: Sequence[dict[str, dict[str, float]]] | None = None,
        terms: Sequence[str] | None = None,
        reranked: bool = False,
        precision: str = "",
    ) -> list[Hit]:
        # One call per shard that holds any of the hits (one round trip for a remote shard).
        owner = np.searchsorted(self._offsets, idx, side="right") - 1
        out: list[Hit | None] = [None] * len(idx)
        for s in np.unique(owner).tolist():
            at = np.flatnonzero(owner == s)
            made = self.shards[s].make_hits(
                idx[at] - self._offsets[s],
                scores[at],
                index_type=index_type,
                score_type=score_type,
                ranks=[ranks[j] for j in at.tolist()] if ranks is not None else None,
                terms=terms,
                reranked=reranked,
                precision=precision,
            )
            for j, hit in zip(at.tolist(), made, strict=True):
                out[j] = replace(hit, rank=j + 1, ordinal=int(idx[j]))
        hits = [h for h in out if h is not None]
        return hits

    # --- citations and the whole picture -----------------------------------------

    def cite(self, citation: str | Citation) -> Chunk:
        """Resolve a citation through the catalog: its content_hash names one shard."""
        cit = parse_citation(citation) if isinstance(citation, str) else citation
        s = self._by_hash.get(cit.content_hash)
        if s is None:
            held = dict(self.catalog.superseded).get(cit.content_hash)
            if held is not None:
                raise CitationError(
                    f"superseded shard: the citation names shard {cit.content_hash} of "
                    f"collection version {held}; this collection is now version {self.version}"
                )
            raise CitationError(
                f"content_hash mismatch: the citation names {cit.content_hash}, which is no "
                f"shard of this collection (version {self.version})"
            )
        chunk = self.shards[s].cite(str(cit))
        return replace(chunk, ordinal=self._offset(s) + chunk.ordinal)

    def verify_source(self, chunk: Chunk, root: str | os.PathLike[str] | None = None) -> Path:
        s, local = self._locate(chunk.ordinal)
        where = str(root) if root is not None else None
        return self.shards[s].verify_source(replace(chunk, ordinal=local), where)

    def info(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "collection_version": self.version,
            "catalog": self.catalog.to_json(),
            "shards": [s.info() for s in self.shards],
        }

    def validate(self) -> AuditReport:
        """Every shard's audit (ids recomputed, vectors walked, derived sections checked),
        the catalog's hashes, and the collection's own audit: each shard holds only sources
        of its bucket range, in source order, no more than the catalog counts, and no chunk
        id appears in two shards."""
        sections = 0
        owner: dict[str, str] = {}
        for shard, entry in zip(self.shards, _files(self.catalog), strict=True):
            report = shard.validate()
            sections += report.n_sections
            name = entry.file or ""
            if report.content_hash != entry.content_hash:
                raise _mismatch(name, "content_hash", entry.content_hash, report)
            ids, uris = shard.holdings()
            _audit_sources(name, uris, entry.buckets, entry.sources, self.catalog.n_buckets)
            for chunk_id in ids:
                other = owner.setdefault(chunk_id, name)
                if other != name:
                    raise _bad(f"chunk id {chunk_id} is in shard {other} and in shard {name}")
        return AuditReport(self.n_chunks, sections, self.version, self.version)

    def close(self) -> None:
        for shard in self.shards:
            shard.close()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<urna.Collection {self.path} shards={len(self.shards)} chunks={self.n_chunks}>"


def _audit_sources(
    name: str, uris: Sequence[str], buckets: tuple[int, int], sources: int, n_buckets: int
) -> None:
    lo, hi = buckets
    previous = b""
    distinct = 0
    for uri in uris:
        key = uri.encode("utf-8")
        if key < previous:
            raise _bad(f"shard {name} is not in source order: {uri} comes after a later source")
        if key != previous:
            distinct += 1
            bucket = bucket_of(uri, n_buckets)
            if not lo <= bucket < hi:
                raise _bad(
                    f"shard {name} holds source {uri} of bucket {bucket}, outside its "
                    f"range [{lo}, {hi})"
                )
        previous = key
    if distinct > sources:  # fewer: a source may give no chunk (an empty document)
        raise _bad(f"shard {name} holds {distinct} sources, the catalog says {sources}")


def _bad(message: str) -> FormatError:
    return FormatError(message, check=19, section="catalog.json")


def _files(catalog: Catalog) -> list[Any]:
    return [e for e in catalog.shards if e.file is not None]


def _mismatch(file: str, what: str, expected: str | None, report: AuditReport) -> FormatError:
    found = report.content_hash if what == "content_hash" else report.file_hash
    return FormatError(
        f"shard {file} has {what} {found}, the catalog says {expected}",
        check=19,
        section="catalog.json",
    )
