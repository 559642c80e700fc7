"""Update a collection by what changed: one new segment and deletions, never a whole shard.

The documents added or changed since the head (``build/changes.py``) are chunked, embedded
(vectors of unchanged chunks come from the files that held them, then from the cache) and
written as one segment: an ordinary .urna file, in source order, with its source table. The
sources they replace, and those removed, are recorded as deletions of the files holding
them. The merge policy (``build/compact.py``) may then fold or merge files. Nothing is
overwritten: the caller publishes the new catalog last (``format/versions.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from urna.build.changes import Changes, Live, rows_for
from urna.build.shard import PreviousShards, chunk_origins, write_file
from urna.build.target import Target, digest, write_options
from urna.errors import BuildError
from urna.format.catalog import Catalog, ShardEntry
from urna.format.versions import now


def add_deletions(catalog: Catalog, gone: dict[str, list[tuple[str, int, int]]]) -> Catalog:
    """The catalog with these (source, lo, hi) deletions added, by file name."""

    def mark(entries: Iterable[ShardEntry]) -> tuple[ShardEntry, ...]:
        out = []
        for e in entries:
            more = gone.get(e.file or "")
            out.append(replace(e, deleted=tuple(sorted((*e.deleted, *more)))) if more else e)
        return tuple(out)

    return replace(catalog, shards=mark(catalog.shards), segments=mark(catalog.segments))


def segment_entry(catalog: Catalog, written_file: str, n: int, **facts: object) -> ShardEntry:
    return ShardEntry(
        index=n,
        file=written_file,
        buckets=(0, catalog.n_buckets),
        **facts,  # type: ignore[arg-type]
    )


def apply_changes(
    target: Target, old: Catalog, old_version: str, live: Live, found: Changes
) -> tuple[Catalog, int] | None:
    """The next catalog (not yet published) and how many chunks were embedded; None when
    nothing changed."""
    embedder = target.embedder
    spans = chunk_origins(found.new, embedder, target.spec, target.max_tokens)
    rows = rows_for(found.new, spans)
    # A new document that gives no chunk is not stored (a fresh build has nothing of it).
    kept_rows = [r for r in rows if r.hi > r.lo or r.uri in found.gone]
    empty_new = len(rows) - len(kept_rows)
    if not spans and not found.gone:
        return None
    catalog = old
    embedded = 0
    files = old.files
    if spans:
        name = (
            "segment-"
            + digest(
                [old_version, target.recipe, *(f"{r.uri}\t{r.doc_sha}" for r in kept_rows)]
            ).removeprefix("sha256:")[:16]
            + ".urna"
        )
        held = [live.docs[uri] for uri in sorted(found.gone)]
        by_file: dict[int, list[tuple[int, int]]] = {}
        for position, row in held:
            if row.hi > row.lo:
                by_file.setdefault(position, []).append((row.lo, row.hi))
        previous = PreviousShards(
            [target.path(files[p].file or "") for p in by_file],
            embedder,
            list(by_file.values()),
        )
        try:
            written = write_file(
                target.spec,
                target.path(name),
                embedder,
                spans,
                kept_rows,
                target.max_tokens,
                previous,
                target.use_cache,
            )
        finally:
            previous.close()
        embedded = written.embedded
        entry = segment_entry(
            old,
            written.file,
            len(old.segments),
            n_chunks=written.n_chunks,
            content_hash=written.content_hash,
            file_hash=written.file_hash,
            sources=len(kept_rows),
            sources_digest=digest([r.doc_sha for r in kept_rows]),
            bm25_total_length=written.bm25_total_length,
        )
        catalog = replace(catalog, segments=(*catalog.segments, entry))
    deletions: dict[str, list[tuple[str, int, int]]] = {}
    for uri in found.gone:
        position, row = live.docs[uri]
        deletions.setdefault(files[position].file or "", []).append((uri, row.lo, row.hi))
    catalog = add_deletions(catalog, deletions)
    if catalog.n_chunks == 0:
        raise BuildError("nothing usable to build: no source holds any text any more")
    catalog = replace(
        catalog,
        parent=old_version,
        created=now(),
        changes={
            "added": found.added - empty_new,
            "changed": found.changed,
            "removed": found.removed,
        },
        build=write_options(target),
        format_version=2,
    )
    return catalog, embedded


def superseding(catalog: Catalog, old: Catalog, old_version: str) -> Catalog:
    """Record the files of ``old`` that ``catalog`` no longer holds (citations of them name
    ``old_version``, retained until pruned)."""
    current = {e.content_hash for e in catalog.files}
    superseded = list(old.superseded) + [
        (e.content_hash, old_version)
        for e in old.files
        if e.content_hash and e.content_hash not in current
    ]
    return replace(catalog, superseded=tuple(dict.fromkeys(superseded)))
