"""Folders that stay indexed: build NAME.urna from a folder, rebuild when its files change.

Every rebuild is incremental (the embedding cache means only changed chunks are
embedded), is written to a temporary file and renamed over the old one, and is
fully verified before it is swapped in. Files that are not regular (a FIFO named
like a document) are skipped; a folder emptied or deleted stops being served (404)
until documents appear again. Requests keep answering from the old
file until the swap, which is one dictionary store; the old file's memory map
stays valid for requests still using it.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from urna.build.run import run_build
from urna.build.spec import BuildSpec, Source
from urna.embed.registry import resolve
from urna.errors import UrnaError
from urna.ingest.loaders import kind_of
from urna.search.corpus import open_corpus
from urna.server.databases import Databases

log = logging.getLogger(__name__)
Snapshot = dict[str, tuple[int, int]]


@dataclass(frozen=True)
class Watch:
    name: str
    folder: Path


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


def snapshot(folder: Path) -> Snapshot:
    out: Snapshot = {}
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = Path(root) / name
            if name.startswith(".") or kind_of(path) is None:
                continue
            try:
                st = path.stat()
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):  # a FIFO or device named like a document is not one
                out[path.relative_to(folder).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


class Watcher:
    def __init__(
        self,
        dbs: Databases,
        watches: list[Watch],
        data: Path,
        *,
        model: str,
        interval: float = 2.0,
        report: Callable[[str], None] | None = None,
    ) -> None:
        self.dbs, self.watches, self.data, self.interval = dbs, watches, data, interval
        self.model = model
        self.report = report or (lambda message: log.warning("%s", message))
        self._stop = threading.Event()
        self._seen: dict[str, Snapshot] = {}
        self._thread = threading.Thread(target=self._loop, name="urna-watch", daemon=True)
        self.embedder = resolve(model)

    def build(self, watch: Watch) -> None:
        before = snapshot(watch.folder)
        out = self.data / f"{watch.name}.urna"
        if not before:
            # Emptied or deleted: what was there must stop being searchable.
            self.dbs.drop(watch.name)
            out.unlink(missing_ok=True)
            self._seen[watch.name] = before
            self.report(f"watch: {watch.name} has no documents in {watch.folder}: not served")
            return
        spec = BuildSpec(
            sources=(Source(watch.folder),), output=out, base=watch.folder, model=self.embedder.name
        )
        summary = run_build(spec, embedder=self.embedder)
        corpus = open_corpus(out, private=True)  # every check, before any request sees it
        self.dbs.swap(watch.name, corpus)
        self._seen[watch.name] = before
        self.report(
            f"watch: {watch.name} built from {watch.folder}: {summary.chunks} chunks, "
            f"{summary.embedded} embedded, {summary.cached} cached"
        )

    def start(self) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        for watch in self.watches:
            self.build(watch)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            for watch in self.watches:
                try:
                    if snapshot(watch.folder) != self._seen.get(watch.name):
                        self.build(watch)
                except UrnaError as exc:  # keep serving the last good file
                    self.report(f"watch: {watch.name} not rebuilt: {exc}")
                except Exception as exc:  # a loader's or the model's own error: same rule
                    self.report(f"watch: {watch.name} not rebuilt: {type(exc).__name__}: {exc}")
