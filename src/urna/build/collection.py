"""A full build of a collection: plan which shard each source belongs to, build the shards
whose sources changed (in this process, in ``jobs`` local processes, or on Ray) and make the
catalog. A shard whose digest equals the previous catalog's keeps its file. The writer
(``build/writer.py``) decides between this and an update, and publishes.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path

from urna.build.changes import Live
from urna.build.discover import Found
from urna.build.documents import chunker_version, doc_sha, found_files, load_files
from urna.build.duplicates import keepers, text_sha
from urna.build.shard import ShardReport, ShardTask, build_shard
from urna.build.spec import BuildSpec, resolved
from urna.build.summary import BuildSummary, CollectionSummary, Report
from urna.build.target import Target, digest, relative_roots, write_options
from urna.build.update import superseding
from urna.embed.base import THREADS_VARIABLE, Embedder
from urna.embed.e5 import cosine_floor
from urna.embed.precision import PRECISIONS
from urna.embed.registry import canonical
from urna.errors import BuildError
from urna.format.catalog import Catalog, ShardEntry
from urna.format.fusion import FusionParams
from urna.format.partition import N_BUCKETS, bucket_of, bucket_ranges, shard_of
from urna.format.regular import Outside, inside
from urna.format.versions import now
from urna.index.bm25 import CONTEXT_DIVISOR
from urna.index.tokenize import tokenizer_name
from urna.ingest.context import CONTEXT_RECIPE
from urna.ingest.loaders import EXTRACTORS
from urna.version import __version__

MAX_SHARDS = 1024
Runner = Callable[[list[ShardTask]], list[ShardReport]]


@dataclass(frozen=True)
class Plan:
    """What each shard holds: its sources' digest, its files, its source count."""

    recipe: str
    digests: list[str]
    files: list[list[Found]]
    sources: list[int]
    docs: dict[str, str]  # every source_uri and its fingerprint
    dropped: frozenset[str] = frozenset()  # duplicates left out (``build/duplicates.py``)


def recipe(
    spec: BuildSpec,
    model_hash: str,
    chunker: str,
    out: Path,
    precision: str = "float32",
    batching: str = "",
) -> str:
    """Everything besides the sources that decides a shard's bytes."""
    dtype, bm25, ann = resolved(spec)
    root = Path(os.path.relpath(spec.base.resolve(), out.resolve())).as_posix()
    options = {
        "urna": __version__,
        "model": spec.model,
        "model_hash": model_hash,
        "chunker": chunker,
        "embed_context": CONTEXT_RECIPE,
        "embed_precision": precision,
        "embed_batching": batching,
        "tokenizer": tokenizer_name(spec.lang) if bm25 else None,
        "bm25_context": CONTEXT_DIVISOR if bm25 else None,
        "fusion": FusionParams.for_build(cosine_floor(canonical(spec.model))).to_manifest(),
        "dtype": dtype,
        "bm25": bm25,
        "ann": ann,
        "rerank_copy": spec.rerank_copy,
        "compress": spec.compress,
        "metadata": spec.metadata,
        "fields": spec.fields.to_json(),
        "spaces": spec.spaces,
        "source_root": root,
        "source_roots": relative_roots(spec, out),
        "extractors": EXTRACTORS,  # a new extractor re-reads every page: another recipe
    }
    return digest([json.dumps(options, sort_keys=True, default=str)])


def plan(
    spec: BuildSpec, n_shards: int, recipe_hash: str, summary: BuildSummary, warn: Report
) -> Plan:
    files = found_files(spec, summary, warn)
    entries: list[list[str]] = [[] for _ in range(n_shards)]
    holders: list[dict[str, Found]] = [{} for _ in range(n_shards)]
    fingerprints: dict[str, str] = {}
    loaded = load_files(files, summary, warn, spec.fields, spec.lang)
    dropped = keepers((d.source_uri, text_sha(d)) for _, docs in loaded for d in docs)
    for uri, held in sorted(dropped.items()):
        warn(f"skipped {uri}: the same text as {held}")
        summary.skipped.append((uri, f"the same text as {held}"))
    summary.documents -= len(dropped)
    for found, docs in loaded:
        for doc in docs:
            if doc.source_uri in dropped:
                continue
            s = shard_of(bucket_of(doc.source_uri), n_shards)
            fingerprint = fingerprints[doc.source_uri] = doc_sha(doc)
            entries[s].append(f"{doc.source_uri}\t{fingerprint}")
            holders[s][found.source_uri] = found
    return Plan(
        recipe=recipe_hash,
        digests=[digest([recipe_hash, *sorted(e)]) for e in entries],
        files=[sorted(h.values(), key=lambda f: f.source_uri) for h in holders],
        sources=[len(e) for e in entries],
        docs=fingerprints,
        dropped=frozenset(dropped),
    )


def absolute(spec: BuildSpec) -> BuildSpec:
    return replace(
        spec,
        output=spec.output.resolve(),
        base=spec.base.resolve(),
        model_path=spec.model_path.resolve() if spec.model_path else None,
        sources=tuple(replace(s, path=s.path.resolve()) for s in spec.sources),
    )


@dataclass(frozen=True)
class Head:
    """A collection's head as a writer found it: its catalog, version and live documents
    (None where its files have no source tables)."""

    catalog: Catalog
    version: str
    live: Live | None
    same_layout: bool  # as many shards as asked for, and the buckets this urna uses


def full(
    target: Target,
    head: Head | None,
    shards: int,
    runner: Runner,
    summary: CollectionSummary,
    *,
    report: Report,
    warn: Report,
) -> Catalog | None:
    """Plan every shard and build those whose sources changed: the new catalog, or None
    when nothing changed."""
    spec, folder = target.spec, target.folder
    old = head.catalog if head is not None else None
    the_plan = plan(spec, shards, target.recipe, summary, warn)
    if not any(the_plan.sources):
        raise BuildError("nothing usable to build: no source holds any text")
    report(f"plan: {sum(the_plan.sources)} sources in {shards} shards")
    same_layout = old is not None and len(old.shards) == shards and old.n_buckets == N_BUCKETS
    reuse = target.use_cache  # --rebuild: every shard built again, nothing reused
    base = old if reuse and same_layout and old is not None and not old.segments else None
    if base is not None and any(e.deleted for e in base.shards):
        base = None  # a shard with deletions is not what its digest says: rebuild
    tasks, kept = _tasks(spec, folder, the_plan, base, target.max_tokens)
    precision = target.embedder.precision
    named = precision if precision in PRECISIONS else None  # a transformer's, else its own
    tasks = [replace(t, use_cache=target.use_cache, precision=named) for t in tasks]
    if reuse and old is not None and base is None:  # every old file may lend its vectors
        pool = tuple(p for e in old.files if e.file and (p := _own(folder, e.file)))
        tasks = [replace(t, previous=pool) for t in tasks]
    report(f"build: {len(tasks)} shards to build, {len(kept)} unchanged")
    reports = runner(tasks) if tasks else []
    live = head.live if head is not None else None
    catalog = _catalog(target, the_plan, reports, kept, _counts(the_plan, live))
    if head is not None:
        if catalog.shards == head.catalog.shards and not head.catalog.segments:
            return None  # nothing changed: no new version
        catalog = replace(catalog, parent=head.version)
        catalog = superseding(catalog, head.catalog, head.version)
    summary.changes = catalog.changes
    summary.rebuilt = sorted(reports, key=lambda r: r.index)
    summary.kept = [e.file or "" for e in kept]
    summary.chunks, summary.embedded = catalog.n_chunks, sum(r.embedded for r in reports)
    summary.cached = sum(r.reused for r in reports)
    return catalog


def _counts(the_plan: Plan, live: Live | None) -> dict[str, int]:
    if live is None:
        return {"added": len(the_plan.docs), "changed": 0, "removed": 0}
    before, after = {u: row.doc_sha for u, (_, row) in live.docs.items()}, the_plan.docs
    return {
        "added": sum(1 for u in after if u not in before),
        "changed": sum(1 for u, d in after.items() if u in before and before[u] != d),
        "removed": sum(1 for u in before if u not in after),
    }


def _tasks(
    spec: BuildSpec, folder: Path, the_plan: Plan, old: Catalog | None, max_tokens: int
) -> tuple[list[ShardTask], list[ShardEntry]]:
    tasks, kept = [], []
    ranges = bucket_ranges(len(the_plan.digests))
    for i, shard_digest in enumerate(the_plan.digests):
        before = old.shards[i] if old is not None else None
        own = _own(folder, before.file) if before is not None and before.file else None
        present = before is not None and (
            before.file is None or (own is not None and own.is_file())
        )
        if before is not None and present and before.sources_digest == shard_digest:
            kept.append(before)
            continue
        if not the_plan.sources[i]:
            continue  # an empty shard: no file
        previous = (own,) if own is not None else ()
        name = f"shard-{i:04d}-{shard_digest.removeprefix('sha256:')[:12]}.urna"
        tasks.append(
            ShardTask(
                index=i,
                output=folder / name,
                files=tuple(the_plan.files[i]),
                buckets=ranges[i],
                n_buckets=N_BUCKETS,
                spec=spec,
                max_tokens=max_tokens,
                previous=previous,
                dropped=the_plan.dropped,
            )
        )
    return tasks, kept


def _own(folder: Path, name: str) -> Path | None:
    """A previous shard file, if it is the folder's own (a link out of it is never reused)."""
    try:
        return inside(folder, name)
    except Outside:
        return None


def local_runner(jobs: int, embedder: Embedder | None = None) -> Runner:
    """Shards built here (with ``embedder``, the writer's), or in ``jobs`` processes (each
    loading the model by name)."""

    def run(tasks: list[ShardTask]) -> list[ShardReport]:
        if jobs <= 1 or len(tasks) <= 1:
            return [build_shard(t, embedder) for t in tasks]
        context = multiprocessing.get_context("spawn")  # no torch state crosses a fork
        workers = min(jobs, len(tasks))
        threads = max(1, (os.cpu_count() or 1) // workers)  # the cores shared, not oversold
        try:
            with ProcessPoolExecutor(
                workers, mp_context=context, initializer=_set_threads, initargs=(threads,)
            ) as pool:
                return list(pool.map(build_shard, tasks))
        except BrokenProcessPool as exc:
            raise BuildError(f"a build process died before it finished its shard ({exc})") from None

    return run


def _set_threads(threads: int) -> None:
    os.environ[THREADS_VARIABLE] = str(threads)


def _catalog(
    target: Target,
    the_plan: Plan,
    reports: list[ShardReport],
    kept: list[ShardEntry],
    counts: dict[str, int],
) -> Catalog:
    built = {r.index: r for r in reports}
    kept_at = {e.index: e for e in kept}
    ranges = bucket_ranges(len(the_plan.digests))
    entries = []
    for i, shard_digest in enumerate(the_plan.digests):
        if i in kept_at:
            entries.append(kept_at[i])
            continue
        r = built.get(i)
        entries.append(
            ShardEntry(
                index=i,
                file=r.file if r else None,
                buckets=ranges[i],
                n_chunks=r.n_chunks if r else 0,
                content_hash=r.content_hash if r else None,
                file_hash=r.file_hash if r else None,
                sources=r.sources if r else 0,
                sources_digest=shard_digest,
                bm25_total_length=r.bm25_total_length if r else None,
            )
        )
    embedder = target.embedder
    _, bm25, _ = resolved(target.spec)
    return Catalog(
        model=embedder.name,
        model_hash=embedder.model_hash,
        dim=embedder.dim,
        chunker_version=chunker_version(target.max_tokens, target.spec.overlap_tokens),
        tokenizer_version=tokenizer_name(target.spec.lang) if bm25 else None,
        recipe=the_plan.recipe,
        n_buckets=N_BUCKETS,
        shards=tuple(entries),
        created=now(),
        changes=counts,
        build=write_options(target),
    )
