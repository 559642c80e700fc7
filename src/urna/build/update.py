"""Update a collection by what changed: one new segment and deletions, never a whole shard.

The documents added or changed since the head (``build/changes.py``) are chunked, embedded
(vectors of unchanged chunks come from the files that held them, then from the cache) and
written as one segment: an ordinary .urna file, in source order, with its source table. The
sources they replace, and those removed, are recorded as deletions of the files holding
them. The merge policy (``build/policy.py``) may then fold or merge files. Nothing is
overwritten: the writer publishes the new catalog last (``format/versions.py``).
"""

from __future__ import annotations

from dataclasses import replace

from urna.build.changes import Changes, Live
from urna.build.compact import add_deletions
from urna.build.documents import chunk, rows_for
from urna.build.segment import write_segment
from urna.build.target import Target, digest, write_options
from urna.build.vectors import Earlier, OpenFiles
from urna.errors import BuildError
from urna.format.catalog import Catalog, ShardEntry
from urna.format.versions import now


def apply_changes(
    target: Target, files: OpenFiles, old: Catalog, old_version: str, live: Live, found: Changes
) -> tuple[Catalog, int] | None:
    """The next catalog (not yet published) and how many chunks were embedded; None when
    nothing changed."""
    spans = chunk([o.doc for o in found.new], target.embedder, target.spec, target.max_tokens)
    rows = rows_for(found.new, spans)
    # A new document that gives no chunk is not stored (a fresh build has nothing of it).
    kept_rows = [r for r in rows if r.hi > r.lo or r.uri in found.gone]
    empty_new = len(rows) - len(kept_rows)
    if not spans and not found.gone:
        return None
    catalog = old
    embedded = 0
    if spans:
        recipe = [old_version, target.recipe, *(f"{r.uri}\t{r.doc_sha}" for r in kept_rows)]
        name = "segment-" + digest(recipe).removeprefix("sha256:")[:16] + ".urna"
        by_file: dict[int, list[tuple[int, int]]] = {}
        for position, row in (live.docs[uri] for uri in sorted(found.gone)):
            if row.hi > row.lo:
                by_file.setdefault(position, []).append((row.lo, row.hi))
        paths = [target.path(old.files[p].file or "") for p in by_file]
        earlier = Earlier(paths, target.embedder, files, list(by_file.values()))
        written = write_segment(target, name, spans, kept_rows, earlier=earlier)
        embedded = written.embedded
        entry = ShardEntry(
            index=len(old.segments),
            file=written.file,
            buckets=(0, old.n_buckets),
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
        deletions.setdefault(old.files[position].file or "", []).append((uri, row.lo, row.hi))
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
