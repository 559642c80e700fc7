"""Folders that stay indexed: each watched folder is a living collection (``build/update.py``).

The watcher polls each folder's files (size and modification time) every ``interval``
seconds; a change becomes an update of the collection: the documents added or changed are
written as one segment, those replaced or removed as deletions, and the merge policy runs.
The new version is opened sharing every unchanged file with the version still answering
(only the new segment is read and fully verified), then swapped in with one dictionary
store: a request gets the old version or the new one, never a mix. Watched collections live
in the library (``URNA_HOME``, listed by ``urna list``) unless ``--data`` names a folder.
Files that are not regular (a FIFO named like a document) are skipped; a folder emptied or
deleted stops being served (404) until documents appear again; its versions stay on disk.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from urna import library
from urna.build.spec import spec_from_args
from urna.build.target import existing_shards, recorded_options
from urna.build.writer import Writer
from urna.embed.registry import DEFAULT_MODEL
from urna.errors import UrnaError
from urna.format.atomic import make_folder
from urna.ingest.loaders import kind_of
from urna.search.fileshard import FileShard
from urna.search.opening import open_collection
from urna.server.databases import Databases

log = logging.getLogger(__name__)
Snapshot = dict[str, tuple[int, int]]


@dataclass(frozen=True)
class Watch:
    name: str
    folder: Path
    collection: Path | None = None  # a served collection it keeps (else the library's NAME)


def parse_watch(value: str) -> Watch:
    name, sep, folder = value.partition("=")
    if not sep or not name or not folder:
        raise UrnaError(f"--watch takes NAME=DIR, got {value!r}")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise UrnaError(f"database name {name!r} may use letters, digits, - and _ only")
    path = Path(folder)
    if not path.is_dir():
        raise UrnaError(f"watched folder not found: {path}")
    return Watch(name, path)


MAX_BYTES = 64 << 20  # a watched file larger than this is skipped (``serve --max-file-mb``)


def snapshot(folder: Path, max_bytes: int | None = None) -> Snapshot:
    """Each document's (size, mtime) under ``folder``: one scandir per folder, one stat per
    document. A link is followed as the build follows it (``build/discover.py``): to a file
    inside the folder only, so nothing outside a watched folder is ever indexed."""
    out: Snapshot = {}
    root = os.path.realpath(folder).rstrip(os.sep) + os.sep
    stack = [(str(folder), "")]
    while stack:
        here, rel = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, f"{rel}{entry.name}/"))
                continue
            if kind_of(entry.name) is None:
                continue
            if entry.is_symlink() and not os.path.realpath(entry.path).startswith(root):
                continue
            try:
                st = entry.stat()
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):  # a FIFO or device named like a document
                continue
            if max_bytes is not None and st.st_size > max_bytes:
                continue  # skipped by the build too: its changes change nothing
            out[f"{rel}{entry.name}"] = (st.st_size, st.st_mtime_ns)
    return out


class Watcher:
    def __init__(
        self,
        dbs: Databases,
        watches: list[Watch],
        data: Path | None,
        *,
        model: str | None,
        interval: float = 0.25,
        report: Callable[[str], None] | None = None,
        max_bytes: int | None = MAX_BYTES,
    ) -> None:
        self.dbs, self.watches, self.data, self.interval = dbs, watches, data, interval
        self.max_bytes = max_bytes  # larger files are skipped and reported: the watcher stays live
        self.model = model  # None: the collection's own (as recorded), else MiniLM
        self.report = report or (lambda message: log.warning("%s", message))
        self._stop = threading.Event()
        self._seen: dict[str, Snapshot] = {}
        self._open: dict[str, dict[str, FileShard]] = {}  # served files, by watch and name
        self._writers: dict[str, Writer] = {}  # each watched folder's, kept between updates
        self._warned: set[str] = set()
        self._thread = threading.Thread(target=self._loop, name="urna-watch", daemon=True)

    def folder(self, watch: Watch) -> Path:
        """Where a watched folder's collection lives."""
        if watch.collection is not None:
            return watch.collection
        if self.data is None:
            return library.target(watch.name, collection=True)
        return self.data / watch.name

    def build(self, watch: Watch, before: Snapshot | None = None) -> None:
        """Update (or first build) the watched folder's collection and serve the result;
        ``before``: the folder as just looked at (else it is looked at now)."""
        before = snapshot(watch.folder, self.max_bytes) if before is None else before
        out = self.folder(watch)
        if not before:
            # Emptied or deleted: what was there must stop being searchable.
            self.dbs.drop(watch.name)
            self._open.pop(watch.name, None)
            self._seen[watch.name] = before
            self.report(f"watch: {watch.name} has no documents in {watch.folder}: not served")
            return
        make_folder(out)
        summary = self._writer(watch, out).build(existing_shards(out) or 1)
        served = self._open.get(watch.name, {})
        collection = open_collection(out, private=True, reuse=served)
        self._open[watch.name] = {
            s.path.name: s for s in collection.shards if isinstance(s, FileShard)
        }
        for shard in self._open[watch.name].values():  # the next update reads these
            self._writers[watch.name].files.lend(shard.path, shard.container)
        self.dbs.swap(watch.name, collection)
        self._seen[watch.name] = before
        changes = summary.changes or {}
        self.report(
            f"watch: {watch.name} is version {summary.version.removeprefix('sha256:')[:12]} "
            f"of {out}: {summary.chunks} chunks; {changes.get('added', 0)} "
            f"added, {changes.get('changed', 0)} changed, {changes.get('removed', 0)} removed, "
            f"{summary.embedded} embedded, in {summary.seconds:.2f} s"
        )

    def _writer(self, watch: Watch, out: Path) -> Writer:
        """The watched folder's writer: the spec ``urna build FOLDER -o DIR`` makes (the
        options a collection recorded kept, as the CLI keeps them), so either may update
        the collection and a start that finds nothing changed writes no version."""
        writer = self._writers.get(watch.name)
        if writer is None or writer.folder != out:
            recorded = recorded_options(out)
            options = {**recorded.options, "max_bytes": self.max_bytes}
            options["model"] = self.model or recorded.options.get("model", DEFAULT_MODEL)
            spec = spec_from_args([watch.folder], out, **options)
            real = watch.folder.resolve()
            if recorded.base is not None and (
                recorded.base == real or recorded.base in real.parents
            ):
                spec = replace(spec, base=recorded.base)
            writer = Writer.for_spec(spec, collection=True, warn=self._warn_once)
            self._writers[watch.name] = writer
        return writer

    def _warn_once(self, message: str) -> None:
        """A skipped file is reported once, not at every change of its folder."""
        if message not in self._warned:
            self._warned.add(message)
            self.report(f"watch: {message}")

    def start(self) -> None:
        # The model loads before the server answers: loaded lazily by the first change, its
        # imports (torch and its kin: thousands of small reads, each giving up the GIL) ran
        # behind 8 querying clients and took 55 s where they take 4 alone.
        for watch in self.watches:
            self._writer(watch, self.folder(watch)).target.embedder.load()
        for watch in self.watches:
            self.build(watch)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        wait = self.interval
        while not self._stop.wait(wait):
            looking = 0.0
            for watch in self.watches:
                try:
                    t0 = time.perf_counter()
                    now = snapshot(watch.folder, self.max_bytes)
                    looking += time.perf_counter() - t0
                    if now != self._seen.get(watch.name):
                        self.build(watch, now)
                except UrnaError as exc:  # keep serving the last good version
                    self.report(f"watch: {watch.name} not updated: {exc}")
                except Exception as exc:  # a loader's or the model's own error: same rule
                    self.report(f"watch: {watch.name} not updated: {type(exc).__name__}: {exc}")
            # A folder so large that looking at it takes a while is looked at less often:
            # the watcher never spends more than about a third of a core polling.
            wait = max(self.interval, 2 * looking)
