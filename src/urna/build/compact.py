"""The merge policy: fold segments and deletions back into shards, merge small segments.

A rewrite reads the live chunks of some files (text, span, place and metadata as stored),
orders them by source and writes one new file with its source table; vectors come from the
files read (float32 ones give their own bits), else the cache, else the model. A folded
shard holds what a fresh build's shard of the same sources holds.

The policy, after every update and on ``urna compact DIR``:

- **fold** shard i when its pressure, (chunks deleted in it + live segment chunks of its
  bucket range) / its live chunks, exceeds ``FOLD_PRESSURE`` (1/3, Lucene's default share
  of deletes allowed in a segment): the shard is rewritten with its live sources and the
  segments' sources of its range, which the segments then delete;
- **merge** segments tier by tier, as Lucene's TieredMergePolicy does: a tier holds the
  segments of one power of ten of live chunks, and ``MERGE_FACTOR`` (10) segments in one tier
  are merged into one segment of the next;
- a segment with no live chunk is dropped.

A shard's pressure comes from the source tables of the segments (small files) and the
catalog's deletions.

``urna compact DIR`` folds every shard with any deletion or incoming source: no segment is
left and the collection answers (and is) as a fresh build of its sources.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from urna.build.shard import PreviousShards, Written, write_file
from urna.build.target import Target, digest, target_of
from urna.build.update import add_deletions, segment_entry, superseding
from urna.format.catalog import Catalog, ShardEntry, read_catalog
from urna.format.partition import bucket_of
from urna.format.sources import SourceRow, read_table
from urna.format.text_table import table_name
from urna.format.versions import collect, now, publish, writing
from urna.ingest.chunker import ChunkSpan
from urna.search.corpus import open_corpus
from urna.search.opening import write_text_table

FOLD_PRESSURE = 1 / 3
MERGE_FACTOR = 10

Part = tuple[ShardEntry, list[SourceRow]]  # a file and the live rows taken from it


def live_rows(target: Target, entry: ShardEntry) -> list[SourceRow]:
    dead = {uri for uri, _, _ in entry.deleted}
    return [r for r in read_table(target.folder, entry.file or "") or [] if r.uri not in dead]


def rewrite(target: Target, parts: Sequence[Part], name: str) -> Written:
    """One new file of these rows' chunks, in source order, with its table."""
    taken = sorted(
        ((row, n) for n, (_, rows) in enumerate(parts) for row in rows),
        key=lambda x: x[0].uri.encode("utf-8"),
    )
    opened = [open_corpus(target.path(e.file or ""), verify="trusted") for e, _ in parts]
    try:
        spans: list[ChunkSpan] = []
        rows: list[SourceRow] = []
        for row, n in taken:
            shard = opened[n]
            lo = len(spans)
            for i in range(row.lo, row.hi):
                c = shard.chunk(i)
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
                        shard.fields_of(i),
                    )
                )
            rows.append(replace(row, lo=lo, hi=len(spans)))
    finally:
        for shard in opened:
            shard.close()
    previous = PreviousShards(
        [target.path(e.file or "") for e, _ in parts],
        target.embedder,
        [[(r.lo, r.hi) for r in rows_ if r.hi > r.lo] for _, rows_ in parts],
    )
    try:
        return write_file(
            target.spec,
            target.path(name),
            target.embedder,
            spans,
            rows,
            target.max_tokens,
            previous,
            target.use_cache,
        )
    finally:
        previous.close()


def _written_entry(base: ShardEntry, written: Written) -> ShardEntry:
    return replace(
        base,
        file=written.file,
        n_chunks=written.n_chunks,
        content_hash=written.content_hash,
        file_hash=written.file_hash,
        sources=len(written.rows),
        sources_digest=digest([r.doc_sha for r in written.rows]),
        bm25_total_length=written.bm25_total_length,
        deleted=(),
    )


def fold(target: Target, catalog: Catalog, which: Sequence[int]) -> Catalog:
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
        shards[i] = _written_entry(entry, rewrite(target, parts, name))
    return drop_empty(add_deletions(replace(catalog, shards=tuple(shards)), taken))


def drop_empty(catalog: Catalog) -> Catalog:
    kept = [s for s in catalog.segments if s.live > 0]
    return replace(catalog, segments=tuple(replace(s, index=i) for i, s in enumerate(kept)))


def merge(target: Target, catalog: Catalog, which: Sequence[int]) -> Catalog:
    """Merge the segments ``which`` into one segment, placed where the first of them was."""
    parts: list[Part] = [
        (catalog.segments[i], live_rows(target, catalog.segments[i])) for i in which
    ]
    key = digest([target.recipe, *(f"{r.uri}\t{r.doc_sha}" for _, rs in parts for r in rs)])
    name = "segment-" + key.removeprefix("sha256:")[:16] + ".urna"
    written = rewrite(target, parts, name)
    merged = _written_entry(
        segment_entry(
            catalog,
            name,
            0,
            n_chunks=0,
            content_hash=None,
            file_hash=None,
            sources=0,
            sources_digest="",
            bm25_total_length=None,
        ),
        written,
    )
    segments = []
    for i, seg in enumerate(catalog.segments):
        if i == which[0]:
            segments.append(merged)
        elif i not in which:
            segments.append(seg)
    return drop_empty(replace(catalog, segments=tuple(segments)))


def load(target: Target, catalog: Catalog) -> list[tuple[int, int]]:
    """Each shard's (deleted, incoming) chunks: deleted in it, and live in segments of its
    bucket range (from the segments' source tables)."""
    starts = [s.buckets[0] for s in catalog.shards]
    incoming = [0] * len(catalog.shards)
    for seg in catalog.segments:
        for row in live_rows(target, seg):
            i = bisect.bisect_right(starts, bucket_of(row.uri, catalog.n_buckets)) - 1
            incoming[i] += row.hi - row.lo
    return [(s.n_chunks - s.live, incoming[i]) for i, s in enumerate(catalog.shards)]


def tier(n: int) -> int:
    return int(math.log10(max(1, n)))


def policy(target: Target, catalog: Catalog, *, everything: bool = False) -> Catalog:
    """Apply the merge policy (``everything``: fold every shard that has any change)."""
    catalog = drop_empty(catalog)
    loads = load(target, catalog)
    if everything:
        which = [i for i, (dead, new) in enumerate(loads) if dead or new]
    else:
        which = [
            i
            for i, (dead, new) in enumerate(loads)
            if (dead + new) / max(1, catalog.shards[i].live) > FOLD_PRESSURE
        ]
    if which:
        catalog = fold(target, catalog, which)
    while True:
        tiers: dict[int, list[int]] = {}
        for i, seg in enumerate(catalog.segments):
            tiers.setdefault(tier(seg.live), []).append(i)
        full = next((ids for _, ids in sorted(tiers.items()) if len(ids) >= MERGE_FACTOR), None)
        if full is None:
            return catalog
        catalog = merge(target, catalog, full[:MERGE_FACTOR])


def compact_collection(folder: Path, model_path: Path | None = None) -> tuple[str, int] | None:
    """``urna compact DIR``: fold every segment and deletion into the shards and publish;
    the new version and how many segments were folded, or None when there is nothing to do."""
    with writing(folder):
        old, raw = read_catalog(folder)
        if not old.segments and not any(e.deleted for e in old.shards):
            name = table_name(old)  # a collection an older urna built gains its text table
            if name is not None and not (folder / name).is_file():
                write_text_table(folder, old)
            return None
        version = Catalog.version_of(raw)
        target = target_of(folder, old, model_path)
        catalog = replace(
            superseding(policy(target, old, everything=True), old, version),
            parent=version,
            created=now(),
            changes={"added": 0, "changed": 0, "removed": 0},
            format_version=2,
        )
        write_text_table(folder, catalog)  # before the head: a server swapping it in finds it
        new = publish(folder, catalog)
        collect(folder)
        return new, len(old.segments)
