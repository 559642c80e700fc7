"""``urna.open``: a path to a .urna file opens a ``Corpus``; a folder holding a catalog.json
opens a ``Collection``. Both are checked the same way and answer the same methods."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from urna.errors import FileError, FormatError, QueryError
from urna.format.catalog import CATALOG, Catalog, ShardEntry, is_collection, read_catalog
from urna.format.partition import bucket_of
from urna.format.reader import Verify
from urna.format.versions import read_version, resolve_at
from urna.index.bm25 import BM25Index
from urna.index.text_table import open_table
from urna.ingest.loaders import kind_of
from urna.search.collection import Collection, shard_path
from urna.search.corpus import Corpus, open_corpus, open_shard
from urna.search.fileshard import FileShard
from urna.search.shard import Shard

log = logging.getLogger(__name__)


def open_path(
    path: str | os.PathLike[str],
    *,
    verify: Verify = "full",
    private: bool = False,
    at: str | None = None,
) -> Corpus | Collection:
    """Open and check a .urna file, or a collection folder (every shard, and the catalog).

    ``verify="full"`` (default) runs every check of the format, hashes included (for a
    collection: each shard's file_hash and content_hash against the catalog);
    ``verify="trusted"`` runs the structural checks only, for a caller that fully
    verified the same files before. ``private=True`` (the server) maps a private copy of each
    file, so a file rewritten or truncated in place under a long-running reader cannot
    fault it. ``at`` opens an earlier version of a collection (``format/versions.py``).
    """
    target = Path(path)
    if target.is_dir():
        if is_collection(target):
            return open_collection(target, verify=verify, private=private, at=at)
        raise FileError(f"not a file: {target} is a directory (and not a collection)")
    if at is not None:
        raise QueryError(
            f"--at needs a collection: {target} is one .urna file, which has one version"
        )
    try:
        return open_corpus(target, verify=verify, private=private)
    except FormatError as exc:
        kind = kind_of(target)
        if exc.check in (1, 2) and kind is not None:  # too short, or not urna's first bytes
            raise FileError(
                f"{target} is a {kind} document, not a .urna file ({exc.reason}): "
                f"`urna build {target} -o {target.with_suffix('.urna').name}` makes one"
            ) from None
        raise


def _bad(message: str) -> FormatError:
    return FormatError(message, check=19, section=CATALOG)


def open_collection(
    folder: Path,
    *,
    verify: Verify = "full",
    private: bool = False,
    at: str | None = None,
    reuse: Mapping[str, Shard] | None = None,
) -> Collection:
    """Open a collection's head (or the version ``at``); files in ``reuse`` (by name, opened
    and checked by an earlier open of the same folder) are shared, not opened again."""
    if at is None:
        catalog, raw = read_catalog(folder)
    else:
        catalog, raw = read_version(folder, resolve_at(folder, at))
    version = Catalog.version_of(raw)
    shards: list[Shard] = []
    shared: set[int] = set()
    try:
        for entry in catalog.files:
            assert entry.file is not None
            ranges = [(lo, hi) for _, lo, hi in entry.deleted]
            known = (reuse or {}).get(entry.file)
            if known is not None and known.content_hash == entry.content_hash:
                shards.append(known.retired(ranges))
                shared.add(len(shards) - 1)
                continue
            path = shard_path(folder, entry.file)
            if not path.is_file():
                raise _bad(f"the catalog names shard {entry.file}, which is missing from {folder}")
            shard = open_shard(path, verify=verify, private=private)
            shards.append(shard)
            _check_shard(catalog, entry, shard, hashes=verify == "full")
            shard.retire(ranges)
        first = shards[0].facts
        for other in (s.facts for s in shards[1:]):
            if other.fusion != first.fusion:
                raise _bad(f"shard {other.name} records another fusion than the first")
            for key in ("embed_context", "embed_precision", "embed_batching", "embed_device"):
                if other.manifest.get(key) != first.manifest.get(key):
                    raise _bad(f"shard {other.name} records another {key} than the first")
        n_chunks = sum(s.facts.n_chunks for s in shards)
        table, damaged = _table(folder, catalog, n_chunks, verify, private)
    except BaseException:
        for n, opened in enumerate(shards):
            if n not in shared:  # a shared file still answers for the version that opened it
                opened.close()
        raise
    head = version if at is None else Catalog.version_of(read_catalog(folder)[1])
    return Collection(folder, catalog, version, shards, head=head, table=table, damaged=damaged)


def _table(
    folder: Path, catalog: Catalog, n_chunks: int, verify: Verify, private: bool
) -> tuple[BM25Index | None, FormatError | None]:
    """The collection's text table, or None and why: a table that fails its checks is
    derived data, so the collection answers without it (each word weighed from the shards,
    as before it was written), says so once, and ``validate`` still refuses it."""
    try:
        return open_table(folder, catalog, n_chunks, hashes=verify == "full", private=private), None
    except FormatError as exc:
        log.warning("warning: %s (ignored: the collection answers without it)", exc.reason)
        return None, exc


SAMPLED = 16  # chunks whose source's bucket an open checks, per shard


def _check_buckets(catalog: Catalog, entry: ShardEntry, shard: FileShard) -> None:
    """Cheap, at every open: the sources of SAMPLED chunks spread over the shard (first and
    last included) lie in its bucket range. A shard swapped with another, copied over
    another or taken from another collection fails this but for a chance of at most
    (its share of the buckets) ** SAMPLED; ``validate`` checks every source."""
    lo, hi = entry.buckets
    n = shard.n_chunks
    picks = np.unique(np.linspace(0, n - 1, num=min(n, SAMPLED)).astype(np.int64))
    for uri in shard.source_uris(picks):
        bucket = bucket_of(uri, catalog.n_buckets)
        if not lo <= bucket < hi:
            raise _bad(
                f"shard {entry.file} holds source {uri} of bucket {bucket}, outside its range "
                f"[{lo}, {hi})"
            )


def _check_shard(catalog: Catalog, entry: ShardEntry, shard: FileShard, *, hashes: bool) -> None:
    name = entry.file
    checks: tuple[tuple[str, object, object], ...] = (
        ("n_chunks", shard.n_chunks, entry.n_chunks),
        ("embedding_model", shard.model, catalog.model),
        ("model_hash", shard.model_hash, catalog.model_hash),
        ("embedding_dim", shard.dim, catalog.dim),
        ("chunker_version", shard.manifest["chunker_version"], catalog.chunker_version),
        ("tokenizer", shard.bm25.tokenizer if shard.bm25 else None, catalog.tokenizer_version),
        (
            "bm25_total_length",
            int(shard.bm25.doc_len.sum(dtype=np.int64)) if shard.bm25 else None,
            entry.bm25_total_length,
        ),
    )
    for what, found, expected in checks:
        if found != expected:
            raise _bad(f"shard {name} has {what} {found}, the catalog says {expected}")
    _check_buckets(catalog, entry, shard)
    if hashes:
        for what, found, expected in (
            ("file_hash", shard.file_hash, entry.file_hash),
            ("content_hash", shard.content_hash, entry.content_hash),
        ):
            if found != expected:
                raise _bad(f"shard {name} has {what} {found}, the catalog says {expected}")
