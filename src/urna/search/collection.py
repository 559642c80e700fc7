"""A collection: many ordinary .urna files (shards) and a catalog, answering as one file.

Searches run in the core (``search/core.py``) over the shards, as a file's run over its one
shard: the same code merges, so a collection answers as one file of the same sources.
Ordinals are global (shard after shard, in catalog order). A hit's citation names its
shard's content_hash; the collection resolves it through the catalog.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from urna.errors import CitationError, ForeignCitationError, FormatError, NotFoundError
from urna.format.audit import AuditReport
from urna.format.build_options import check_build_options
from urna.format.catalog import Catalog, ShardEntry, read_catalog
from urna.format.chunks import Chunk
from urna.format.fusion import FusionParams
from urna.format.history import check_history
from urna.format.partition import bucket_of
from urna.format.regular import Outside, inside
from urna.format.sources import check_rows, read_table
from urna.format.text_table import table_name
from urna.format.versions import chain, pruned
from urna.index.bm25 import BM25Index
from urna.search.api import SearchAPI
from urna.search.cite import Citation, parse_citation
from urna.search.core import Searcher
from urna.search.corpus import open_corpus
from urna.search.fileshard import FileShard
from urna.search.shard import Shard
from urna.search.text_table import check_table


class Collection(SearchAPI):
    """A collection folder opened for reading. Create it with :func:`urna.open`."""

    def __init__(
        self,
        folder: Path,
        catalog: Catalog,
        version: str,
        shards: Sequence[Shard],
        head: str | None = None,
        table: BM25Index | None = None,
        damaged: FormatError | None = None,
    ) -> None:
        self._folder = folder
        self._damaged = damaged  # a text table that failed its checks, left unread
        self.catalog = catalog
        self.version = version
        self.head = head or version  # the newest version (``version`` is older with ``at``)
        self.shards = list(shards)
        self._searcher = Searcher(self.shards, table)
        self._offsets = self._searcher.offsets
        self._by_hash = {s.content_hash: i for i, s in enumerate(self.shards)}
        first = self.shards[0].facts
        self.manifest: dict[str, Any] = first.manifest
        self.fusion: FusionParams = first.fusion

    # --- what it is ----------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._folder

    @property
    def n_chunks(self) -> int:
        """Chunks that count: those of every file, less the catalog's deletions."""
        return self._searcher.live

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
        stored = int(self._offsets[-1])
        if not 0 <= i < stored:
            raise IndexError(f"chunk ordinal {i} out of range [0, {stored})")
        s = int(np.searchsorted(self._offsets, i, side="right")) - 1
        return s, i - int(self._offsets[s])

    def chunk(self, i: int) -> Chunk:
        s, local = self._locate(i)
        return replace(self.shards[s].chunk(local), ordinal=i)

    def embedding(self, i: int) -> np.ndarray:
        s, local = self._locate(i)
        return self.shards[s].embedding(local)

    def live_ordinals(self) -> np.ndarray:
        """The global ordinals of the chunks that count (the catalog deletes the rest)."""
        return self._searcher.live_ordinals()

    def source_uris(self, ordinals: np.ndarray) -> list[str]:
        """The source_uri of each global ordinal (one call per shard holding any)."""
        return self._searcher.source_uris(ordinals)

    # --- citations and the whole picture -----------------------------------------

    def cite(self, citation: str | Citation) -> Chunk:
        """Resolve a citation through the catalog: its content_hash names one shard."""
        cit = parse_citation(citation) if isinstance(citation, str) else citation
        s = self._by_hash.get(cit.content_hash)
        if s is None:
            return self._cite_retained(cit)
        shard = self.shards[s]
        chunk = shard.cite(str(cit))
        if isinstance(shard, FileShard) and not shard.is_live(chunk.ordinal):
            self._check_retained_live(shard.path.name, chunk.source_uri)
        return replace(chunk, ordinal=int(self._offsets[s]) + chunk.ordinal)

    def _check_retained_live(self, name: str, uri: str) -> None:
        """A chunk this version deletes resolves while a retained version still counts it."""
        for _, catalog in chain(self._folder):
            entry = next((e for e in catalog.files if e.file == name), None)
            if entry is not None and uri not in {d[0] for d in entry.deleted}:
                return
        gone = sorted(pruned(self._folder).values(), key=lambda p: p.pruned)
        when = f"; versions were pruned, last on {gone[-1].pruned}" if gone else ""
        raise CitationError(
            f"the citation names a chunk of {uri} that {name} no longer counts, and no "
            f"retained version of the collection holds it{when}"
        )

    def _cite_retained(self, cit: Citation) -> Chunk:
        """A citation of a file this version does not hold: resolved in the retained version
        that holds it (the chunk keeps its ordinal there, and no global one: -1)."""
        wanted = cit.content_hash
        found = self._retained_file(wanted)
        if found is not None:
            with open_corpus(found, verify="full") as shard:
                if shard.content_hash != wanted:
                    raise CitationError(f"retained file {found.name} was altered")
                return replace(shard.cite(str(cit)), ordinal=-1)
        held = dict(read_catalog(self._folder)[0].superseded).get(wanted)
        held = held or dict(self.catalog.superseded).get(wanted)
        if held is not None:
            gone = pruned(self._folder).get(held)
            when = f", pruned on {gone.pruned}" if gone else ", which is not retained"
            raise CitationError(
                f"superseded shard: the citation names shard {wanted} of collection version "
                f"{held}{when}; this collection is now version {self.head}"
            )
        raise ForeignCitationError(
            f"content_hash mismatch: the citation names {wanted}, which is no "
            f"shard of this collection (version {self.version})"
        )

    def _retained_file(self, content_hash: str) -> Path | None:
        """The file of a retained version whose content_hash this is."""
        for _, catalog in chain(self._folder):
            entry = next((e for e in catalog.files if e.content_hash == content_hash), None)
            if entry is not None and entry.file is not None:
                return shard_path(self._folder, entry.file)
        return None

    def verify_source(self, chunk: Chunk, root: str | os.PathLike[str] | None = None) -> Path:
        where = str(root) if root is not None else None
        if chunk.ordinal < 0:  # a chunk of a retained version's file
            cit = parse_citation(chunk.citation_id)
            found = self._retained_file(cit.content_hash)
            if found is None:
                raise CitationError(f"no retained version holds {cit.content_hash}")
            with open_corpus(found, verify="trusted") as shard:
                i = shard.find(cit.chunk_id)
                if i is None:
                    raise NotFoundError(f"chunk not found: {cit.chunk_id}")
                return shard.verify_source(replace(chunk, ordinal=i), where)
        s, local = self._locate(chunk.ordinal)
        return self.shards[s].verify_source(replace(chunk, ordinal=local), where)

    @property
    def text_table(self) -> str | None:
        """The text table this version reads (``search/text_table.py``), or None."""
        return table_name(self.catalog) if self._searcher.postings.table is not None else None

    def info(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "collection_version": self.version,
            "text_table": self.text_table,
            "catalog": self.catalog.to_json(),
            "shards": [s.info() for s in self.shards],
        }

    def validate(self) -> AuditReport:
        """Every shard's audit (ids recomputed, vectors walked, derived sections checked),
        the catalog's hashes, and the collection's own audit: each shard holds only sources
        of its bucket range (a segment: any), in source order, no more than the catalog
        counts; its source table (if any) tiles its chunks by source, and each deletion is one
        of its rows; no live chunk id and no live source is in two files; the recorded build
        options are ones a build writes; the history holds (``format/history.py``)."""
        check_build_options(self.catalog.build)
        sections = 0
        owner: dict[str, str] = {}
        source_owner: dict[str, str] = {}
        for shard, entry in zip(self.shards, self.catalog.files, strict=True):
            report = shard.validate()
            sections += report.n_sections
            name = entry.file or ""
            if report.content_hash != entry.content_hash:
                raise _mismatch(name, "content_hash", entry.content_hash, report)
            ids, uris = shard.holdings()
            _audit_sources(name, uris, entry.buckets, entry.sources, self.catalog.n_buckets)
            dead = _audit_table(self._folder, entry, uris)
            for chunk_id, uri in zip(ids, uris, strict=True):
                if uri in dead:
                    continue
                other = owner.setdefault(chunk_id, name)
                if other != name:
                    raise _bad(f"chunk id {chunk_id} is in shard {other} and in shard {name}")
                other = source_owner.setdefault(uri, name)
                if other != name:
                    raise _bad(f"source {uri} is live in {other} and in {name}")
        if self._damaged is not None:
            raise self._damaged
        postings = self._searcher.postings
        if postings.table is not None:  # derived: weighed again from the shards, compared
            name = table_name(self.catalog) or ""
            check_table(name, postings.table, postings, self._searcher.stats.of([]))
        check_history(self._folder)  # last: a forged file is named by its own check first
        return AuditReport(self.n_chunks, sections, self.version, self.version)

    def close(self) -> None:
        self._searcher.close()
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


def shard_path(folder: Path, name: str) -> Path:
    """Where a file named by a catalog is read: in the folder, or through a link that stays
    in it; a link out of the folder is refused before its target is opened."""
    try:
        return inside(folder, name)
    except Outside as exc:
        raise _bad(str(exc)) from None


def _audit_table(folder: Path, entry: ShardEntry, uris: Sequence[str]) -> set[str]:
    """Check a file's source table against its chunks and the catalog's deletions of it;
    returns the deleted sources."""
    name = entry.file or ""
    rows = read_table(folder, name)
    if rows is None:
        if entry.deleted:
            raise _bad(f"{name} has deletions but no source table")
        return set()
    check_rows(name, rows, len(uris), entry.deleted)
    for row in rows:
        if any(uris[i] != row.uri for i in range(row.lo, row.hi)):
            raise _bad(f"the source table of {name} misplaces source {row.uri}")
    return {uri for uri, _, _ in entry.deleted}


def _bad(message: str) -> FormatError:
    return FormatError(message, check=19, section="catalog.json")


def _mismatch(file: str, what: str, expected: str | None, report: AuditReport) -> FormatError:
    found = report.content_hash if what == "content_hash" else report.file_hash
    return FormatError(
        f"shard {file} has {what} {found}, the catalog says {expected}",
        check=19,
        section="catalog.json",
    )
