"""Build a collection: write its shards, or update it by what changed; publish a version.

An existing collection of the same layout and recipe is **updated** (``build/update.py``):
only the sources added, changed or removed are read, chunked and written, as one new segment
and deletions, then the merge policy runs (``build/compact.py``). Otherwise (a first build,
another shard count or recipe, ``--rebuild``, or a collection written before source tables)
planning reads every source once to learn which shard each belongs to and a digest of each
shard's sources; a shard whose digest equals the previous catalog's keeps its file, the
others are built by ``build/shard.py`` in this process, in ``jobs`` local processes, or on
Ray. Either way new files get new names, the new catalog is kept as a version and replaced
last (atomically, ``format/versions.py``), and only then are files that no retained
version names removed: a reader always sees a whole collection, old or new.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path

from urna import __version__
from urna.build.changes import Live, StatCache, changes, doc_sha
from urna.build.compact import policy
from urna.build.discover import Found, discover
from urna.build.run import BuildSummary, Report, chunker_version, load_files
from urna.build.run import window as model_window
from urna.build.shard import ShardReport, ShardTask, build_shard
from urna.build.spec import BuildSpec, resolved
from urna.build.target import Target, digest, write_options
from urna.build.update import apply_changes, superseding
from urna.embed.base import THREADS_VARIABLE
from urna.embed.device import arithmetic, device_of
from urna.embed.registry import resolve
from urna.errors import BuildError, UrnaError
from urna.format.atomic import make_folder
from urna.format.catalog import Catalog, ShardEntry, is_collection, read_catalog
from urna.format.partition import N_BUCKETS, bucket_of, bucket_ranges, shard_of
from urna.format.regular import Outside, inside
from urna.format.versions import collect, now, publish, writing
from urna.index.bm25 import CONTEXT_DIVISOR
from urna.index.tokenize import TOKENIZER_VERSION
from urna.ingest.context import CONTEXT_RECIPE
from urna.search.fusion import FusionParams
from urna.search.opening import write_text_table

MAX_SHARDS = 1024
Runner = Callable[[list[ShardTask]], list[ShardReport]]


@dataclass
class CollectionSummary(BuildSummary):
    shards: int = 0
    rebuilt: list[ShardReport] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    version: str = ""
    changes: dict[str, int] | None = None  # an update's sources added, changed and removed
    segments: int = 0
    updated: bool = False  # written as an update (not shard by shard)


@dataclass(frozen=True)
class Plan:
    """What each shard holds: its sources' digest, its files, its source count."""

    recipe: str
    digests: list[str]
    files: list[list[Found]]
    sources: list[int]
    docs: dict[str, str]  # every source_uri and its fingerprint


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
        "tokenizer": TOKENIZER_VERSION if bm25 else None,
        "bm25_context": CONTEXT_DIVISOR if bm25 else None,
        "fusion": FusionParams.for_build().to_manifest(),
        "dtype": dtype,
        "bm25": bm25,
        "ann": ann,
        "rerank_copy": spec.rerank_copy,
        "compress": spec.compress,
        "metadata": spec.metadata,
        "fields": spec.fields.to_json(),
        "spaces": spec.spaces,
        "source_root": root,
    }
    return digest([json.dumps(options, sort_keys=True, default=str)])


def plan(
    spec: BuildSpec, n_shards: int, recipe_hash: str, summary: BuildSummary, warn: Report
) -> Plan:
    files, skipped = discover(spec.sources, spec.base)
    for path, reason in skipped:
        warn(f"skipped {path}: {reason}")
    summary.skipped = [(str(p), r) for p, r in skipped]
    entries: list[list[str]] = [[] for _ in range(n_shards)]
    holders: list[dict[str, Found]] = [{} for _ in range(n_shards)]
    fingerprints: dict[str, str] = {}
    for found, docs in load_files(files, summary, warn, spec.fields):
        for doc in docs:
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
    )


def absolute(spec: BuildSpec) -> BuildSpec:
    return replace(
        spec,
        output=spec.output.resolve(),
        base=spec.base.resolve(),
        model_path=spec.model_path.resolve() if spec.model_path else None,
        sources=tuple(replace(s, path=s.path.resolve()) for s in spec.sources),
    )


def _previous(folder: Path, rebuild: bool) -> tuple[Catalog | None, str]:
    if rebuild or not is_collection(folder):
        return None, ""
    try:
        catalog, raw = read_catalog(folder)
    except UrnaError:
        return None, ""  # a damaged catalog is rebuilt from scratch
    return catalog, Catalog.version_of(raw)


def build_collection(
    spec: BuildSpec,
    *,
    shards: int,
    jobs: int = 1,
    runner: Runner | None = None,
    report: Report = lambda _: None,
    warn: Report = lambda _: None,
    rebuild: bool = False,
    merge: bool = True,
) -> CollectionSummary:
    """Write (or update) the collection folder ``spec.output`` with ``shards`` shards;
    ``merge=False`` leaves an update's segment and deletions for ``urna compact``."""
    t0 = time.perf_counter()
    folder = spec.output
    if not 1 <= shards <= MAX_SHARDS:
        raise BuildError(f"shards must be in [1, {MAX_SHARDS}], got {shards}")
    if folder.exists() and not folder.is_dir():
        raise BuildError(f"output {folder} is a file; a collection is a folder")
    make_folder(folder)
    with writing(folder):
        return _build(absolute(spec), shards, jobs, runner, report, warn, rebuild, merge, t0)


def _build(
    spec: BuildSpec,
    shards: int,
    jobs: int,
    runner: Runner | None,
    report: Report,
    warn: Report,
    rebuild: bool,
    merge: bool,
    t0: float,
) -> CollectionSummary:
    folder = spec.output  # absolute: workers (processes, Ray actors) may run elsewhere
    embedder = resolve(spec.model, model_path=spec.model_path)
    max_tokens = model_window(spec, embedder)
    chunker = chunker_version(max_tokens, spec.overlap_tokens)
    summary = CollectionSummary(output=folder, model=embedder.name, shards=shards)
    arith = arithmetic(embedder.precision, device_of(embedder))
    recipe_hash = recipe(spec, embedder.model_hash, chunker, folder, arith, embedder.batching)
    target = Target(spec, folder, embedder, max_tokens, recipe_hash, use_cache=not rebuild)
    old, old_version = _previous(folder, rebuild)
    same_layout = old is not None and len(old.shards) == shards and old.n_buckets == N_BUCKETS
    live = Live.of(folder, old) if old is not None and same_layout else None
    if old is not None and live is not None and old.recipe == recipe_hash:
        stats = StatCache.of(folder)
        found, discovered = changes(spec, live, summary, warn, stats)
        report(f"update: {found.added} added, {found.changed} changed, {found.removed} removed")
        made = apply_changes(target, old, old_version, live, found)
        if made is None:
            catalog = old
            collect(folder)  # files a killed writer left
        else:
            catalog, summary.embedded = made
            catalog = superseding(policy(target, catalog) if merge else catalog, old, old_version)
            _publish(folder, catalog)
        stats.save({f.source_uri for f in discovered})
        summary.updated = True
        summary.chunks = catalog.n_chunks
        summary.changes = {"added": 0, "changed": 0, "removed": 0, **catalog.changes}
        if made is None:
            summary.changes = {"added": 0, "changed": 0, "removed": 0}
    else:
        catalog = _full(target, shards, jobs, runner, report, warn, summary, old, old_version, live)
    summary.version, summary.segments = catalog.version, len(catalog.segments)
    summary.size = sum((folder / (e.file or "")).stat().st_size for e in catalog.files)
    summary.seconds = time.perf_counter() - t0
    return summary


def _full(
    target: Target,
    shards: int,
    jobs: int,
    runner: Runner | None,
    report: Report,
    warn: Report,
    summary: CollectionSummary,
    old: Catalog | None,
    old_version: str,
    live: Live | None,
) -> Catalog:
    """Plan every shard; build those whose sources changed; publish."""
    spec, folder = target.spec, target.folder
    the_plan = plan(spec, shards, target.recipe, summary, warn)
    if not any(the_plan.sources):
        raise BuildError("nothing usable to build: no source holds any text")
    report(f"plan: {sum(the_plan.sources)} sources in {shards} shards")
    same_layout = old is not None and len(old.shards) == shards and old.n_buckets == N_BUCKETS
    base = old if same_layout and old is not None and not old.segments else None
    if base is not None and any(e.deleted for e in base.shards):
        base = None  # a shard with deletions is not what its digest says: rebuild
    tasks, kept = _tasks(spec, folder, the_plan, base, target.max_tokens)
    tasks = [replace(t, use_cache=target.use_cache) for t in tasks]
    if old is not None and base is None:  # every old file may lend its vectors
        pool = tuple(p for e in old.files if e.file and (p := _own(folder, e.file)))
        tasks = [replace(t, previous=pool) for t in tasks]
    report(f"build: {len(tasks)} shards to build, {len(kept)} unchanged")
    reports = (runner or _local_runner(jobs))(tasks) if tasks else []
    catalog = _catalog(target, the_plan, reports, kept, _counts(the_plan, live))
    if old is not None:
        if catalog.shards == old.shards and not old.segments:
            return old  # nothing changed: no new version
        catalog = replace(catalog, parent=old_version)
        catalog = superseding(catalog, old, old_version)
    _publish(folder, catalog, weigh=True)
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
            )
        )
    return tasks, kept


def _own(folder: Path, name: str) -> Path | None:
    """A previous shard file, if it is the folder's own (a link out of it is never reused)."""
    try:
        return inside(folder, name)
    except Outside:
        return None


def _local_runner(jobs: int) -> Runner:
    def run(tasks: list[ShardTask]) -> list[ShardReport]:
        if jobs <= 1 or len(tasks) <= 1:
            return [build_shard(t) for t in tasks]
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
        tokenizer_version=TOKENIZER_VERSION if bm25 else None,
        recipe=the_plan.recipe,
        n_buckets=N_BUCKETS,
        shards=tuple(entries),
        created=now(),
        changes=counts,
        build=write_options(target),
    )


def _publish(folder: Path, catalog: Catalog, weigh: bool = False) -> None:
    """Write its text table (``weigh``: a full build; an update leaves it to ``urna
    compact``), keep the new version and make it the head (last, atomically), then remove
    the data files no retained version names (and killed writers' files)."""
    write_text_table(folder, catalog, weigh)
    publish(folder, catalog)
    collect(folder)
