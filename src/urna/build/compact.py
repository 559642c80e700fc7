"""Carrying out the merge policy's decisions (``build/policy.py``): folds and merges.

A rewrite reads the live chunks of some files (text, span, place and metadata as stored,
through ``format/chunks.py``), orders them by source and writes one new file with its
source table through the one writer (``build/segment.py``); vectors come from the files
read (float32 ones give their own bits), else the cache, else the model. A folded shard
holds what a fresh build's shard of the same sources holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from urna.build.policy import Decision, Holdings, merged
from urna.build.segment import Written, write_segment
from urna.build.target import Target, digest
from urna.build.vectors import Earlier, OpenFiles
from urna.errors import BuildError
from urna.format.catalog import Catalog, ShardEntry
from urna.format.chunks import ChunkStore
from urna.format.partition import bucket_of
from urna.format.sources import SourceRow, check_rows, read_table
from urna.ingest.chunker import ChunkSpan

Part = tuple[ShardEntry, list[SourceRow]]  # a file and the live rows taken from it


def live_rows(target: Target, entry: ShardEntry) -> list[SourceRow]:
    """The file's rows less the catalog's deletions, the table checked against both."""
    name = entry.file or ""
    rows = read_table(target.folder, name)
    if rows is None:
        raise BuildError(f"{name} has no source table: `urna build SOURCES -o DIR` updates it")
    check_rows(name, rows, entry.n_chunks, entry.deleted)
    dead = {uri for uri, _, _ in entry.deleted}
    return [r for r in rows if r.uri not in dead]


def holdings(target: Target, catalog: Catalog) -> Holdings:
    """What each segment holds, as the policy reads it: each live source's bucket and
    chunks (from the segments' source tables, small files)."""
    return {
        seg.file or "": [
            (bucket_of(r.uri, catalog.n_buckets), r.hi - r.lo) for r in live_rows(target, seg)
        ]
        for seg in catalog.segments
    }


def add_deletions(catalog: Catalog, gone: dict[str, list[tuple[str, int, int]]]) -> Catalog:
    """The catalog with these (source, lo, hi) deletions added, by file name."""

    def mark(entries: Iterable[ShardEntry]) -> tuple[ShardEntry, ...]:
        out = []
        for e in entries:
            more = gone.get(e.file or "")
            out.append(replace(e, deleted=tuple(sorted((*e.deleted, *more)))) if more else e)
        return tuple(out)

    return replace(catalog, shards=mark(catalog.shards), segments=mark(catalog.segments))


def drop_empty(catalog: Catalog) -> Catalog:
    kept = [s for s in catalog.segments if s.live > 0]
    return replace(catalog, segments=tuple(replace(s, index=i) for i, s in enumerate(kept)))


def carry_out(target: Target, files: OpenFiles, catalog: Catalog, decision: Decision) -> Catalog:
    """``catalog`` after the decision's folds, then its merges, each written."""
    if decision.folds:
        catalog = fold(target, files, catalog, decision.folds)
    names: dict[str, str] = {}
    for k, group in enumerate(decision.merges):
        catalog, names[merged(k)] = merge(
            target, files, catalog, [names.get(name, name) for name in group]
        )
    return catalog


def rewrite(target: Target, files: OpenFiles, parts: Sequence[Part], name: str) -> Written:
    """One new file of these rows' chunks, in source order, with its table."""
    taken = sorted(
        ((row, n) for n, (_, rows) in enumerate(parts) for row in rows),
        key=lambda x: x[0].uri.encode("utf-8"),
    )
    paths = [target.path(e.file or "") for e, _ in parts]
    stores = [ChunkStore(files.get(path)) for path in paths]
    spans: list[ChunkSpan] = []
    rows: list[SourceRow] = []
    for row, n in taken:
        store = stores[n]
        lo = len(spans)
        for i in range(row.lo, row.hi):
            c = store.chunk(i)
            spans.append(
                ChunkSpan(
                    c.source_uri,
                    c.byte_start,
                    c.byte_end,
                    c.text,
                    0,
                    c.section_path,
                    c.page,
                    c.source_ordinal,
                    store.fields_of(i),
                )
            )
        rows.append(replace(row, lo=lo, hi=len(spans)))
    ranges = [[(r.lo, r.hi) for r in rows_ if r.hi > r.lo] for _, rows_ in parts]
    earlier = Earlier(paths, target.embedder, files, ranges)
    return write_segment(target, name, spans, rows, earlier=earlier)


def written_entry(base: ShardEntry, written: Written) -> ShardEntry:
    rows = written.rows or ()
    return replace(
        base,
        file=written.file,
        n_chunks=written.n_chunks,
        content_hash=written.content_hash,
        file_hash=written.file_hash,
        sources=len(rows),
        sources_digest=digest([r.doc_sha for r in rows]),
        bm25_total_length=written.bm25_total_length,
        deleted=(),
    )


def fold(target: Target, files: OpenFiles, catalog: Catalog, which: Sequence[int]) -> Catalog:
    """Rewrite the shards ``which`` with their live sources and the segments' of their range."""
    seg_rows = [(s, live_rows(target, s)) for s in catalog.segments]
    shards = list(catalog.shards)
    taken: dict[str, list[tuple[str, int, int]]] = {}
    for i in which:
        entry = catalog.shards[i]
        lo, hi = entry.buckets
        parts: list[Part] = [(entry, live_rows(target, entry))] if entry.file else []
        for seg, rows in seg_rows:
            mine = [r for r in rows if lo <= bucket_of(r.uri, catalog.n_buckets) < hi]
            if mine:
                parts.append((seg, mine))
                taken.setdefault(seg.file or "", []).extend((r.uri, r.lo, r.hi) for r in mine)
        if not any(rows for _, rows in parts):
            shards[i] = replace(
                entry,
                file=None,
                n_chunks=0,
                content_hash=None,
                file_hash=None,
                sources=0,
                bm25_total_length=None,
                deleted=(),
            )
            continue
        key = digest([target.recipe, *(f"{r.uri}\t{r.doc_sha}" for _, rs in parts for r in rs)])
        name = f"shard-{i:04d}-{key.removeprefix('sha256:')[:12]}.urna"
        if name == entry.file:  # the same sources: the file it already is
            continue
        shards[i] = written_entry(entry, rewrite(target, files, parts, name))
    return drop_empty(add_deletions(replace(catalog, shards=tuple(shards)), taken))


def merge(
    target: Target, files: OpenFiles, catalog: Catalog, which: Sequence[str]
) -> tuple[Catalog, str]:
    """Merge the segments named ``which`` into one, placed where the first of them was; the
    catalog and the new segment's name."""
    at = {s.file: i for i, s in enumerate(catalog.segments)}
    picked = [at[name] for name in which]
    parts: list[Part] = [
        (catalog.segments[i], live_rows(target, catalog.segments[i])) for i in picked
    ]
    key = digest([target.recipe, *(f"{r.uri}\t{r.doc_sha}" for _, rs in parts for r in rs)])
    name = "segment-" + key.removeprefix("sha256:")[:16] + ".urna"
    written = rewrite(target, files, parts, name)
    base = ShardEntry(
        index=0,
        file=name,
        buckets=(0, catalog.n_buckets),
        n_chunks=0,
        content_hash=None,
        file_hash=None,
        sources=0,
        sources_digest="",
        bm25_total_length=None,
    )
    out = written_entry(base, written)
    segments = []
    for i, seg in enumerate(catalog.segments):
        if i == picked[0]:
            segments.append(out)
        elif i not in picked:
            segments.append(seg)
    return drop_empty(replace(catalog, segments=tuple(segments))), name
