"""The catalog of a collection: ``catalog.json`` beside its shard files (docs/format.md).

A collection is a folder of ordinary .urna v1 files (shards) and one canonical JSON
document that lists them: the model, chunker and tokenizer every shard shares, the
partition scheme, and per shard its file, bucket range, hashes, chunk count and the
statistics exact BM25 needs across shards. The SHA-256 of the catalog's bytes is the
collection's version. Canonical JSON: keys sorted, no spaces, UTF-8, one final newline.

Version 2 (a living collection) adds segments (small files of sources added or changed
since the shards were written, any bucket), deletions (the sources, with their chunk ranges,
that no longer count in a file), the version it follows (``parent``), when it was made, what
changed, and the build options a compaction writes with. Version 1 catalogs still open.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urna.errors import FileError, FormatError
from urna.format.manifest import strict_loads
from urna.format.regular import describe, inside, read_regular

CATALOG = "catalog.json"
KIND = "urna.collection"
VERSION = 2
VERSIONS = (1, 2)
SCHEME = "sha256-source-uri"
MAX_CATALOG = 64 << 20
HASH = re.compile(r"sha256:[0-9a-f]{64}")
SHARD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.urna")


def _bad(message: str) -> FormatError:
    return FormatError(f"catalog: {message}", check=19, section=CATALOG)


@dataclass(frozen=True)
class ShardEntry:
    """One shard: its file (None for a shard that holds no source) and what it holds."""

    index: int
    file: str | None
    buckets: tuple[int, int]
    n_chunks: int
    content_hash: str | None
    file_hash: str | None
    sources: int
    sources_digest: str
    bm25_total_length: int | None  # sum of BM25 document lengths; None without BM25
    deleted: tuple[tuple[str, int, int], ...] = ()  # (source_uri, lo, hi): chunks gone

    @property
    def live(self) -> int:
        """Chunks that still count: those stored, less those deleted."""
        return self.n_chunks - sum(hi - lo for _, lo, hi in self.deleted)

    def to_json(self, version: int = VERSION) -> dict[str, Any]:
        extra = {"deleted": [list(d) for d in self.deleted]} if version >= 2 else {}
        return {
            **extra,
            "index": self.index,
            "file": self.file,
            "buckets": list(self.buckets),
            "n_chunks": self.n_chunks,
            "content_hash": self.content_hash,
            "file_hash": self.file_hash,
            "sources": self.sources,
            "sources_digest": self.sources_digest,
            "bm25_total_length": self.bm25_total_length,
        }


@dataclass(frozen=True)
class Catalog:
    """A collection version. ``segments`` hold sources of any bucket, in the order they were
    added; a source lives (has its chunks counted) in one file at most."""

    model: str
    model_hash: str
    dim: int
    chunker_version: str
    tokenizer_version: str | None
    recipe: str  # sha256 of the build options every shard shares
    n_buckets: int
    shards: tuple[ShardEntry, ...]
    superseded: tuple[tuple[str, str], ...] = field(default=())  # (content_hash, version)
    segments: tuple[ShardEntry, ...] = ()
    parent: str | None = None  # the version this one follows
    created: str = ""  # when it was made, ISO 8601 UTC (SOURCE_DATE_EPOCH when set)
    changes: dict[str, int] = field(default_factory=dict)  # added, changed, removed sources
    build: dict[str, Any] = field(default_factory=dict)  # the write options (compaction's)
    format_version: int = VERSION

    @property
    def files(self) -> tuple[ShardEntry, ...]:
        """Every entry holding a file: the shards in order, then the segments."""
        return tuple(e for e in (*self.shards, *self.segments) if e.file is not None)

    @property
    def n_chunks(self) -> int:
        return sum(s.live for s in (*self.shards, *self.segments))

    def to_json(self) -> dict[str, Any]:
        v = self.format_version
        extra: dict[str, Any] = {}
        if v >= 2:
            extra = {
                "segments": [s.to_json(v) for s in self.segments],
                "parent": self.parent,
                "created": self.created,
                "changes": dict(self.changes),
                "build": self.build,
            }
        return {
            **extra,
            "format": KIND,
            "format_version": v,
            "model": {"name": self.model, "model_hash": self.model_hash, "dim": self.dim},
            "chunker_version": self.chunker_version,
            "tokenizer_version": self.tokenizer_version,
            "recipe": self.recipe,
            "partition": {"scheme": SCHEME, "buckets": self.n_buckets},
            "n_chunks": self.n_chunks,
            "shards": [s.to_json(v) for s in self.shards],
            "superseded": [
                {"content_hash": h, "collection_version": v} for h, v in self.superseded
            ],
        }

    def encode(self) -> bytes:
        return canonical(self.to_json())

    @property
    def version(self) -> str:
        return self.version_of(self.encode())

    @staticmethod
    def version_of(raw: bytes) -> str:
        """A collection's version: the SHA-256 of its catalog's bytes."""
        return "sha256:" + hashlib.sha256(raw).hexdigest()


def canonical(value: Any) -> bytes:
    return (
        json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    ).encode("utf-8")


def is_collection(path: Path) -> bool:
    """A folder holding anything named catalog.json: opening it then reads (or refuses) that
    catalog, never the folder's .urna files one by one."""
    return path.is_dir() and os.path.lexists(path / CATALOG)


def read_catalog(folder: Path) -> tuple[Catalog, bytes]:
    """The folder's catalog, checked, and its bytes (whose SHA-256 is the version)."""
    path = folder / CATALOG
    try:
        raw = read_regular(inside(folder, CATALOG), MAX_CATALOG)
    except FileNotFoundError:
        raise FileError(f"not a collection: {path} not found") from None
    except OSError as exc:
        raise FileError(describe(path, exc)) from None
    if len(raw) > MAX_CATALOG:
        raise _bad(f"larger than {MAX_CATALOG} bytes")
    try:
        doc = strict_loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad(f"not valid JSON ({exc})") from None
    catalog = parse_catalog(doc)
    if raw != catalog.encode():
        raise _bad("not in canonical form (sorted keys, no spaces, one final newline)")
    return catalog, raw


def _get(doc: Any, key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    if not isinstance(doc, dict) or key not in doc:
        raise _bad(f"missing {where}{key}")
    value = doc[key]
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        raise _bad(f"{where}{key} has the wrong type")
    return value


def _hash_or_none(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not HASH.fullmatch(value):
        raise _bad(f"{what} must be sha256:<64 hex>")
    return value


def parse_catalog(doc: Any) -> Catalog:
    """Check every field of a decoded catalog; one FormatError (check 19) names the first."""
    version = _get(doc, "format_version", int)
    if _get(doc, "format", str) != KIND or version not in VERSIONS:
        raise _bad(f"format must be {KIND} version 1 or {VERSION}")
    model = _get(doc, "model", dict)
    partition = _get(doc, "partition", dict)
    if _get(partition, "scheme", str, "partition.") != SCHEME:
        raise _bad(f"partition.scheme must be {SCHEME}")
    n_buckets = _get(partition, "buckets", int, "partition.")
    if not 1 <= n_buckets <= 1 << 20:
        raise _bad(f"partition.buckets must be in [1, 2^20], got {n_buckets}")
    raw_shards = _get(doc, "shards", list)
    if not raw_shards:
        raise _bad("no shards")
    shards = tuple(_shard(i, s, n_buckets, version) for i, s in enumerate(raw_shards))
    segments = tuple(
        _shard(i, s, n_buckets, version, "segments")
        for i, s in enumerate(_get(doc, "segments", list) if version >= 2 else [])
    )
    for seg in segments:
        if seg.buckets != (0, n_buckets) or seg.file is None:
            raise _bad(f"segments[{seg.index}] must hold a file and span every bucket")
    if (
        shards[0].buckets[0] != 0
        or shards[-1].buckets[1] != n_buckets
        or any(a.buckets[1] != b.buckets[0] for a, b in itertools.pairwise(shards))
    ):
        raise _bad("shard bucket ranges must tile [0, buckets) in order")
    files = [s.file for s in (*shards, *segments) if s.file is not None]
    if len(set(files)) != len(files):
        raise _bad("two shards name the same file")
    tokenizer = doc.get("tokenizer_version")
    if tokenizer is not None and not isinstance(tokenizer, str):
        raise _bad("tokenizer_version must be a string or null")
    catalog = Catalog(
        model=_get(model, "name", str, "model."),
        model_hash=_hash_or_none(_get(model, "model_hash", str, "model."), "model.model_hash")
        or "",
        dim=_get(model, "dim", int, "model."),
        chunker_version=_get(doc, "chunker_version", str),
        tokenizer_version=tokenizer,
        recipe=_hash_or_none(_get(doc, "recipe", str), "recipe") or "",
        n_buckets=n_buckets,
        shards=shards,
        superseded=tuple(_superseded(x) for x in _get(doc, "superseded", list)),
        segments=segments,
        format_version=version,
        **(_history(doc) if version >= 2 else {}),
    )
    if _get(doc, "n_chunks", int) != catalog.n_chunks:
        raise _bad("n_chunks is not the sum of the shards' counts")
    if catalog.n_chunks == 0:
        raise _bad("the collection holds no chunk")
    return catalog


def _history(doc: dict[str, Any]) -> dict[str, Any]:
    parent = _hash_or_none(doc.get("parent"), "parent")
    created = _get(doc, "created", str)
    changes = _get(doc, "changes", dict)
    if set(changes) - {"added", "changed", "removed"} or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in changes.values()
    ):
        raise _bad("changes must count added, changed and removed sources")
    return {
        "parent": parent,
        "created": created,
        "changes": changes,
        "build": _get(doc, "build", dict),
    }


def _deleted(value: Any, where: str, n_chunks: int) -> tuple[tuple[str, int, int], ...]:
    if not isinstance(value, list):
        raise _bad(f"{where}deleted must be a list")
    out = []
    for item in value:
        if (
            not isinstance(item, list)
            or len(item) != 3
            or not isinstance(item[0], str)
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in item[1:])
            or not 0 <= item[1] <= item[2] <= n_chunks
        ):
            raise _bad(f"{where}deleted holds [source_uri, lo, hi] with 0 <= lo <= hi <= n_chunks")
        out.append((item[0], item[1], item[2]))
    spans = sorted((lo, hi) for _, lo, hi in out if hi > lo)
    if any(a[1] > b[0] for a, b in itertools.pairwise(spans)):
        raise _bad(f"{where}deleted ranges overlap")
    if len({uri for uri, _, _ in out}) != len(out):
        raise _bad(f"{where}deleted names a source twice")
    return tuple(out)


def _shard(i: int, doc: Any, n_buckets: int, version: int, kind: str = "shards") -> ShardEntry:
    where = f"{kind}[{i}]."
    if _get(doc, "index", int, where) != i:
        raise _bad(f"{where}index must be {i}")
    file = doc.get("file") if isinstance(doc, dict) else None
    if file is not None and (not isinstance(file, str) or not SHARD_NAME.fullmatch(file)):
        raise _bad(f"{where}file must be a plain .urna file name in the folder")
    buckets = _get(doc, "buckets", list, where)
    if (
        len(buckets) != 2
        or not all(isinstance(b, int) and not isinstance(b, bool) for b in buckets)
        or not 0 <= buckets[0] < buckets[1] <= n_buckets
    ):
        raise _bad(f"{where}buckets must be [lo, hi) within [0, {n_buckets}]")
    n_chunks = _get(doc, "n_chunks", int, where)
    total = doc.get("bm25_total_length")
    if total is not None and (not isinstance(total, int) or isinstance(total, bool) or total < 0):
        raise _bad(f"{where}bm25_total_length must be a non-negative integer or null")
    entry = ShardEntry(
        index=i,
        file=file,
        buckets=(buckets[0], buckets[1]),
        n_chunks=n_chunks,
        content_hash=_hash_or_none(doc.get("content_hash"), f"{where}content_hash"),
        file_hash=_hash_or_none(doc.get("file_hash"), f"{where}file_hash"),
        sources=_get(doc, "sources", int, where),
        sources_digest=_hash_or_none(_get(doc, "sources_digest", str, where), where) or "",
        bm25_total_length=total,
        deleted=_deleted(_get(doc, "deleted", list, where), where, n_chunks)
        if version >= 2
        else (),
    )
    has_file = file is not None
    if (
        has_file != (n_chunks > 0)
        or has_file != (entry.content_hash is not None)
        or (has_file != (entry.file_hash is not None))
    ):
        raise _bad(f"{where}a shard has a file, hashes and chunks, or none of them")
    return entry


def _superseded(doc: Any) -> tuple[str, str]:
    content = _hash_or_none(_get(doc, "content_hash", str, "superseded."), "superseded hash")
    version = _hash_or_none(
        _get(doc, "collection_version", str, "superseded."), "superseded version"
    )
    return content or "", version or ""
