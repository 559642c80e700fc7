"""The writer: one object owns a folder's life, as Lucene's IndexWriter does.

``Writer`` builds, updates, compacts and publishes one collection folder (or writes one
single file: the case with one segment and no catalog), over one state: the target (spec,
model, window, recipe), the earlier files it opened (``build/vectors.py``), the head's live
documents and the stat cache it last used. ``urna build`` and ``urna compact`` make one per
command; ``urna serve --watch`` holds one per watched folder, so each update reuses what
the last one opened and read. Every data file goes through the one writer function
(``build/segment.py``); the merge policy decides (``build/policy.py``) and
``build/compact.py`` carries its decisions out.

Publishing keeps the new version and makes it the head last (atomically,
``format/versions.py``); only then are files that no retained version names removed, so a
reader always sees a whole collection, old or new.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from urna.build.changes import Live, StatCache, changes
from urna.build.collection import MAX_SHARDS, Head, Runner, absolute, full, local_runner, recipe
from urna.build.compact import carry_out, drop_empty, holdings
from urna.build.documents import STEP, chunk, chunker_version, found_files, load_all, window
from urna.build.language import suggestion
from urna.build.policy import decide
from urna.build.progress import Mode, Progress
from urna.build.segment import write_segment
from urna.build.spec import BuildSpec
from urna.build.summary import BuildSummary, CollectionSummary, Report, quiet
from urna.build.target import Target, recorded_precision, same_model, target_of
from urna.build.update import apply_changes, superseding
from urna.build.vectors import OpenFiles
from urna.embed.base import Embedder
from urna.embed.device import arithmetic, device_of
from urna.embed.registry import resolve
from urna.errors import BuildError, UrnaError
from urna.format.atomic import make_folder
from urna.format.catalog import Catalog, is_collection, read_catalog
from urna.format.partition import N_BUCKETS
from urna.format.versions import collect, latest_version, now, publish, writing
from urna.index.text_table import table_intact, write_text_table
from urna.ingest.chunker import ChunkSpan

ZERO = {"added": 0, "changed": 0, "removed": 0}


class Writer:
    """Builds, updates, compacts and publishes one folder (or writes one file)."""

    def __init__(
        self,
        folder: Path,
        target: Target | None = None,
        *,
        model_path: Path | None = None,
        embedder: Embedder | None = None,
        model: str | None = None,
        report: Report = quiet,
        warn: Report = quiet,
    ) -> None:
        self.folder = folder
        self._target = target
        self._model = model  # a compaction's model, when the user names one
        self._model_path = model_path  # a compaction's model folder, when the user gave one
        self._embedder = embedder
        self.report = report
        self.warn = warn
        self.files = OpenFiles()
        self._live: tuple[str, Live | None] | None = None  # the head version's, once read
        self._stats: tuple[tuple[int, int], StatCache] | None = None

    @classmethod
    def for_spec(
        cls,
        spec: BuildSpec,
        *,
        collection: bool,
        embedder: Embedder | None = None,
        rebuild: bool = False,
        new: bool = False,
        report: Report = quiet,
        warn: Report = quiet,
        progress: Mode = "off",
        tell: Report = quiet,
    ) -> Writer:
        """The writer of ``spec.output``: a collection folder, or a single file. Under
        ``--precision auto`` an existing output keeps the precision it records, unless
        ``rebuild`` or ``new`` starts it over."""
        if collection:
            spec = absolute(spec)  # workers (processes, Ray actors) may run elsewhere
        embedder = embedder or resolve(
            spec.model,
            model_path=spec.model_path,
            precision=None if rebuild or new else recorded_precision(spec.output),
        )
        max_tokens = window(spec, embedder)
        folder = spec.output if collection else spec.output.parent
        chunker = chunker_version(max_tokens, spec.overlap_tokens)
        arith = arithmetic(embedder.precision, device_of(embedder))
        recipe_hash = (
            recipe(spec, embedder.model_hash, chunker, folder, arith, embedder.batching)
            if collection
            else ""
        )
        target = Target(
            spec, folder, embedder, max_tokens, recipe_hash, not rebuild, progress, tell
        )
        return cls(folder, target, report=report, warn=warn)

    @property
    def target(self) -> Target:
        """What every file is written with (a compaction's: as the head's catalog records)."""
        if self._target is None:
            catalog, _ = read_catalog(self.folder)
            self._target = target_of(
                self.folder, catalog, self._model_path, self._embedder, self._model
            )
        return self._target

    def close(self) -> None:
        self.files.close()

    # --- a single file: one segment, no catalog ------------------------------------------

    def write_file(self, *, dry_run: bool = False) -> BuildSummary:
        """Discover, load and chunk the spec's sources, embed them (through the cache) and
        write the file atomically, verified. ``dry_run`` stops before embedding."""
        t0 = time.perf_counter()
        target = self.target
        spec, out = target.spec, target.spec.output
        summary = BuildSummary(output=out, dry_run=dry_run, model=target.embedder.name)
        files = found_files(spec, summary, self.warn)
        self.report(f"discover: {len(files)} files")
        summary.timings["discover"] = time.perf_counter() - t0
        stage = time.perf_counter()
        with Progress("load", len(files), "file", target.progress, target.tell) as shown:
            docs = load_all(files, spec, summary, self.warn, shown)
        spans: list[ChunkSpan] = []
        with Progress("chunk", len(docs), "document", target.progress, target.tell) as shown:
            for at in range(0, len(docs), STEP):  # each document is chunked on its own
                part = docs[at : at + STEP]
                spans.extend(chunk(part, target.embedder, spec, target.max_tokens))
                shown.advance(len(part))
        summary.chunks = len(spans)
        summary.timings["load+chunk"] = time.perf_counter() - stage
        self.report(
            f"chunk: {summary.documents} documents, {len(spans)} chunks "
            f"(<= {target.max_tokens} tokens)"
        )
        hint = suggestion([s.text for s in spans]) if spec.lang is None else None
        if hint:
            self.warn(hint)
        if not spans:
            raise BuildError(
                f"nothing usable to build: {len(files)} supported files, "
                f"{len(summary.skipped)} skipped, 0 chunks"
            )
        if not dry_run:
            stage = time.perf_counter()
            written = write_segment(
                target, out.name, spans, None, files=summary.files, report=self.report
            )
            summary.timings["embed+write+verify"] = time.perf_counter() - stage
            self.report(f"write: {out} ({written.size} bytes), verified")
            summary.embedded, summary.cached = written.embedded, len(spans) - written.embedded
            summary.size, summary.file_hash = written.size, written.file_hash
            summary.content_hash = written.content_hash
        summary.seconds = time.perf_counter() - t0
        return summary

    # --- a collection --------------------------------------------------------------------

    def build(
        self, shards: int, *, runner: Runner | None = None, merge: bool = True, new: bool = False
    ) -> CollectionSummary:
        """Update the collection by what changed (one segment and deletions, then the merge
        policy unless ``merge`` is False), or build it shard by shard where it cannot be
        updated (a first build, another layout or recipe, ``--rebuild``, files without
        source tables, ``new``); publish the new version. Its parent is always the head (or,
        where the head cannot be read and ``new`` starts over, the newest retained version),
        so no build drops a version; a build with another model than the head's is refused
        unless ``new``."""
        t0 = time.perf_counter()
        target = self.target
        summary = CollectionSummary(output=self.folder, model=target.embedder.name, shards=shards)
        with writing(self.folder):
            head = self._head(shards, new)
            if head is not None and not new:
                same_model(self.folder, head.catalog, target.embedder)
            if (
                head is not None
                and head.live is not None
                and head.same_layout
                and not new
                and target.use_cache
                and head.catalog.recipe == target.recipe
            ):
                catalog = self._update(head, summary, merge)
            else:
                runner = runner or local_runner(1, target.embedder)
                made = full(
                    target, head, shards, runner, summary, report=self.report, warn=self.warn
                )
                if made is None:  # only over a head, when nothing changed
                    assert head is not None
                    catalog = head.catalog
                    if new:  # the head file is written again (it may be the damaged one)
                        self.publish(catalog, weigh=True)
                else:
                    catalog = made
                    self.publish(made, weigh=True)
            summary.version, summary.segments = catalog.version, len(catalog.segments)
            summary.size = sum((self.folder / (e.file or "")).stat().st_size for e in catalog.files)
        self.files.keep([self.folder / (e.file or "") for e in catalog.files])
        summary.seconds = time.perf_counter() - t0
        return summary

    def _head(self, shards: int, new: bool) -> Head | None:
        """The head to update or build on (None: a new folder). An unreadable head is an
        error, unless ``new`` starts over: then the newest retained version is the parent."""
        if not is_collection(self.folder):
            return None
        try:
            catalog, raw = read_catalog(self.folder)
        except UrnaError as exc:
            if not new:
                raise BuildError(
                    f"cannot read the head catalog of {self.folder} ({exc}); `urna build "
                    "... --new` starts over and keeps every retained version answerable"
                ) from None
            found = latest_version(self.folder)
            if found is None:
                return None
            version, catalog = found
            return Head(catalog, version, Live.of(self.folder, catalog), False)
        version = Catalog.version_of(raw)
        if self._live is None or self._live[0] != version:
            self._live = (version, Live.of(self.folder, catalog))
        same_layout = len(catalog.shards) == shards and catalog.n_buckets == N_BUCKETS
        return Head(catalog, version, self._live[1], same_layout)

    def _update(self, head: Head, summary: CollectionSummary, merge: bool) -> Catalog:
        assert head.live is not None
        stats = self._stat_cache()
        found, discovered = changes(self.target.spec, head.live, summary, self.warn, stats)
        self.report(
            f"update: {found.added} added, {found.changed} changed, {found.removed} removed"
        )
        made = apply_changes(self.target, self.files, head.catalog, head.version, head.live, found)
        if made is None:
            catalog = head.catalog
            collect(self.folder)  # files a killed writer left
            summary.changes = dict(ZERO)
        else:
            catalog, summary.embedded = made
            catalog = superseding(
                self.policy(catalog) if merge else catalog, head.catalog, head.version
            )
            self.publish(catalog)
            summary.changes = {**ZERO, **catalog.changes}
        stats.save({f.source_uri for f in discovered})
        self._stats = (StatCache.stamp(self.folder), stats)
        summary.updated = True
        summary.chunks = catalog.n_chunks
        return catalog

    def _stat_cache(self) -> StatCache:
        stamp = StatCache.stamp(self.folder)
        if self._stats is not None and self._stats[0] == stamp:
            return self._stats[1]
        return StatCache.of(self.folder)

    def policy(self, catalog: Catalog, *, everything: bool = False) -> Catalog:
        """``catalog`` after the merge policy's folds and merges, each file written."""
        catalog = drop_empty(catalog)
        decision = decide(catalog, holdings(self.target, catalog), everything=everything)
        return carry_out(self.target, self.files, catalog, decision)

    def compact(self) -> tuple[str, int] | None:
        """Fold every segment and deletion into the shards and publish: the new version and
        how many segments were folded, or None when there is nothing to do."""
        with writing(self.folder):
            old, raw = read_catalog(self.folder)
            if not old.segments and not any(e.deleted for e in old.shards):
                if not table_intact(self.folder, old):  # missing (an older urna), or damaged
                    write_text_table(self.folder, old)
                return None
            version = Catalog.version_of(raw)
            catalog = replace(
                superseding(self.policy(old, everything=True), old, version),
                parent=version,
                created=now(),
                changes=dict(ZERO),
                format_version=2,
            )
            new = self.publish(catalog, weigh=True)
        self.files.keep([self.folder / (e.file or "") for e in catalog.files])
        return new, len(old.segments)

    def publish(self, catalog: Catalog, *, weigh: bool = False) -> str:
        """Write the text table (``weigh``: a full build or a compaction; an update leaves
        it to ``urna compact``), keep the new version and make it the head (last,
        atomically), then remove the data files no retained version names."""
        write_text_table(self.folder, catalog, weigh)  # before the head: a server finds it
        version = publish(self.folder, catalog)
        collect(self.folder)
        return version


def build_file(
    spec: BuildSpec,
    *,
    embedder: Embedder | None = None,
    report: Report = quiet,
    warn: Report = quiet,
    dry_run: bool = False,
    use_cache: bool = True,
    progress: Mode = "off",
    tell: Report = quiet,
) -> BuildSummary:
    """``urna build PATH... -o OUT.urna``: one file."""
    out = spec.output
    if out.exists() and out.is_dir():
        raise BuildError(f"output {out} is a directory")
    if not dry_run:
        make_folder(out.parent)
    writer = Writer.for_spec(
        spec,
        collection=False,
        embedder=embedder,
        rebuild=not use_cache,
        report=report,
        warn=warn,
        progress=progress,
        tell=tell,
    )
    try:
        return writer.write_file(dry_run=dry_run)
    finally:
        writer.close()


def build_folder(
    spec: BuildSpec,
    *,
    shards: int,
    jobs: int = 1,
    runner: Runner | None = None,
    embedder: Embedder | None = None,
    report: Report = quiet,
    warn: Report = quiet,
    rebuild: bool = False,
    merge: bool = True,
    new: bool = False,
    progress: Mode = "off",
    tell: Report = quiet,
) -> CollectionSummary:
    """``urna build PATH... -o DIR --shards N``: build or update the collection folder."""
    folder = spec.output
    if not 1 <= shards <= MAX_SHARDS:
        raise BuildError(f"shards must be in [1, {MAX_SHARDS}], got {shards}")
    if folder.exists() and not folder.is_dir():
        raise BuildError(f"output {folder} is a file; a collection is a folder")
    make_folder(folder)
    writer = Writer.for_spec(
        spec,
        collection=True,
        embedder=embedder,
        rebuild=rebuild,
        new=new,
        report=report,
        warn=warn,
        progress=progress,
        tell=tell,
    )
    try:
        runner = runner or local_runner(jobs, writer.target.embedder)
        return writer.build(shards, runner=runner, merge=merge, new=new)
    finally:
        writer.close()


def compact_folder(
    folder: Path,
    model_path: Path | None = None,
    embedder: Embedder | None = None,
    model: str | None = None,
) -> tuple[str, int] | None:
    """``urna compact DIR``."""
    writer = Writer(folder, model_path=model_path, embedder=embedder, model=model)
    try:
        return writer.compact()
    finally:
        writer.close()
