"""A collection served on Ray Serve (the extra ``urna[ray]``): one deployment per shard, each
opening its own shard file and placeable on chosen nodes, and an ingress deployment that
serves the same HTTP app as ``urna serve``. The ingress embeds a query once, runs the two
BM25 rounds against the shard deployments, merges, and answers exactly as the local server:
the merging code is the same ``Collection``, with remote shards instead of local ones.

A version's deletions travel with each ranking call (the deployment keeps a view per
version). The ingress follows the folder as every server does (``server/databases.py``): a
new version's unchanged files stay on their deployments, and its new files (segments, or
shards a compaction rewrote) are opened by the ingress itself until the next deployment."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import signal
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from urna.build.ray_build import connect
from urna.errors import FormatError, UrnaError, missing_extra
from urna.format.audit import AuditReport
from urna.format.catalog import Catalog, parse_catalog, read_catalog
from urna.format.chunks import Chunk
from urna.format.reader import Verify
from urna.index.bm25_global import TermStats
from urna.search.collection import Collection
from urna.search.corpus import open_shard
from urna.search.facets import Counts
from urna.search.fileshard import FileShard
from urna.search.filters import Filter
from urna.search.opening import shard_path
from urna.search.result import Hit
from urna.search.shard import HitSpec, Pair, Ranking, ShardFacts
from urna.search.where import Schema
from urna.server.databases import Databases

Dead = tuple[tuple[int, int], ...]  # a version's deleted chunk ranges of one file
VIEWS = 4


class ShardServer:
    """A shard deployment: one shard file opened once, answering the shard calls."""

    def __init__(self, path: str, verify: str) -> None:
        mode: Verify = "full" if verify == "full" else "trusted"
        self.shard = open_shard(path, verify=mode, private=True)
        self._views: OrderedDict[Dead, FileShard] = OrderedDict()

    def _at(self, dead: Dead) -> FileShard:
        """The file with a version's deletions (the calls that rank name them; views of the
        few most recent versions are kept)."""
        if not dead:
            return self.shard
        view = self._views.get(dead)
        if view is None:
            view = self._views[dead] = self.shard.retired(dead)
            while len(self._views) > VIEWS:
                self._views.popitem(last=False)
        return view

    def facts(self) -> tuple[ShardFacts, str, str]:
        """The shard's facts, its content_hash and its file_hash."""
        return self.shard.facts, self.shard.content_hash, self.shard.file_hash

    def schema(self) -> Schema:
        return self.shard.schema()

    def count(self, kept: Filter | None, dead: Dead = ()) -> int:
        return self._at(dead).count(kept)

    def vector_top(self, q: np.ndarray, depth: int, kept: Filter | None, dead: Dead = ()) -> Pair:
        return self._at(dead).vector_top(q, depth, kept)

    def ann_top(
        self, q: np.ndarray, k: int, ef: int, kept: Filter | None, dead: Dead = ()
    ) -> Ranking:
        return self._at(dead).ann_top(q, k, ef, kept)

    def graph_top(
        self, q: np.ndarray, k: int, hops: int, ef: int, kept: Filter | None, dead: Dead = ()
    ) -> Ranking:
        return self._at(dead).graph_top(q, k, hops, ef, kept)

    def space_top(
        self,
        vector: np.ndarray,
        space: str,
        k: int,
        expect: str | None,
        kept: Filter | None,
        dead: Dead = (),
    ) -> Ranking:
        return self._at(dead).space_top(vector, space, k, expect, kept)

    def term_stats(self, tokens: Sequence[str], dead: Dead = ()) -> TermStats:
        return self._at(dead).term_stats(tokens)

    def text_top(
        self,
        tokens: Sequence[str],
        stats: TermStats | None,
        depth: int,
        kept: Filter | None,
        dead: Dead = (),
    ) -> Pair:
        return self._at(dead).text_top(tokens, stats, depth, kept)

    def scores_at(
        self,
        q: np.ndarray,
        tokens: Sequence[str],
        stats: TermStats | None,
        rows: Pair,
        dead: Dead = (),
    ) -> Pair:
        return self._at(dead).scores_at(q, tokens, stats, rows)

    def make_hits(self, idx: np.ndarray, scores: np.ndarray, spec: HitSpec) -> list[Hit]:
        return self.shard.make_hits(idx, scores, spec)

    def facet_counts(self, names: Sequence[str], ordinals: np.ndarray) -> Counts:
        return self.shard.facet_counts(names, ordinals)

    def source_uris(self, idx: np.ndarray) -> list[str]:
        return self.shard.source_uris(idx)

    def chunk(self, i: int) -> Chunk:
        return self.shard.chunk(i)

    def embedding(self, i: int) -> np.ndarray:
        return self.shard.embedding(i)

    def embeddings(self, idx: np.ndarray) -> np.ndarray:
        return self.shard.embeddings(idx)

    def cite(self, citation: str) -> Chunk:
        return self.shard.cite(citation)

    def verify_source(self, chunk: Chunk, root: str | None) -> Path:
        return self.shard.verify_source(chunk, root)

    def info(self) -> dict[str, Any]:
        return self.shard.info()

    def validate(self) -> AuditReport:
        return self.shard.validate()

    def holdings(self) -> tuple[list[str], list[str]]:
        return self.shard.holdings()


class RemoteShard:
    """The ``Shard`` calls, answered by a shard deployment (blocking; the core calls it from
    its threads). Each call names the deployment's method as an attribute, never a string."""

    remote = True

    def __init__(self, handle: Any, facts: tuple[ShardFacts, str, str]) -> None:
        self._handle = handle
        self.facts, self.content_hash, self.file_hash = facts
        self._dead: Dead = ()

    def retired(self, ranges: Sequence[tuple[int, int]]) -> RemoteShard:
        """The same deployment, asked with a version's deletions (it keeps a view of them)."""
        view = copy.copy(self)
        view._dead = tuple((int(lo), int(hi)) for lo, hi in ranges if hi > lo)
        deleted = sum(hi - lo for lo, hi in view._dead)
        view.facts = replace(self.facts, deleted=deleted)
        return view

    def schema(self) -> Schema:
        result: Schema = self._handle.schema.remote().result()
        return result

    def count(self, kept: Filter | None) -> int:
        return int(self._handle.count.remote(kept, self._dead).result())

    def vector_top(self, q: np.ndarray, depth: int, kept: Filter | None) -> Pair:
        result: Pair = self._handle.vector_top.remote(q, depth, kept, self._dead).result()
        return result

    def ann_top(self, q: np.ndarray, k: int, ef: int, kept: Filter | None) -> Ranking:
        result: Ranking = self._handle.ann_top.remote(q, k, ef, kept, self._dead).result()
        return result

    def graph_top(self, q: np.ndarray, k: int, hops: int, ef: int, kept: Filter | None) -> Ranking:
        result: Ranking = self._handle.graph_top.remote(q, k, hops, ef, kept, self._dead).result()
        return result

    def space_top(
        self, vector: np.ndarray, space: str, k: int, expect: str | None, kept: Filter | None
    ) -> Ranking:
        result: Ranking = self._handle.space_top.remote(
            vector, space, k, expect, kept, self._dead
        ).result()
        return result

    def term_stats(self, tokens: Sequence[str]) -> TermStats:
        result: TermStats = self._handle.term_stats.remote(list(tokens), self._dead).result()
        return result

    def text_top(
        self, tokens: Sequence[str], stats: TermStats | None, depth: int, kept: Filter | None
    ) -> Pair:
        result: Pair = self._handle.text_top.remote(
            list(tokens), stats, depth, kept, self._dead
        ).result()
        return result

    def scores_at(
        self, q: np.ndarray, tokens: Sequence[str], stats: TermStats | None, rows: Pair
    ) -> Pair:
        result: Pair = self._handle.scores_at.remote(
            q, list(tokens), stats, rows, self._dead
        ).result()
        return result

    def facet_counts(self, names: Sequence[str], ordinals: np.ndarray) -> Counts:
        result: Counts = self._handle.facet_counts.remote(list(names), ordinals).result()
        return result

    def make_hits(self, idx: np.ndarray, scores: np.ndarray, spec: HitSpec) -> list[Hit]:
        result: list[Hit] = self._handle.make_hits.remote(idx, scores, spec).result()
        return result

    def source_uris(self, idx: np.ndarray) -> list[str]:
        result: list[str] = self._handle.source_uris.remote(idx).result()
        return result

    def embeddings(self, idx: np.ndarray) -> np.ndarray:
        result: np.ndarray = self._handle.embeddings.remote(idx).result()
        return result

    def live_ordinals(self) -> np.ndarray:
        """The ordinals this version keeps (its deleted ranges are known here)."""
        dead = np.zeros(self.facts.n_chunks, dtype=bool)
        for lo, hi in self._dead:
            dead[lo:hi] = True
        return np.flatnonzero(~dead)

    def chunk(self, i: int) -> Chunk:
        result: Chunk = self._handle.chunk.remote(i).result()
        return result

    def embedding(self, i: int) -> np.ndarray:
        result: np.ndarray = self._handle.embedding.remote(i).result()
        return result

    def cite(self, citation: str) -> Chunk:
        result: Chunk = self._handle.cite.remote(citation).result()
        return result

    def verify_source(self, chunk: Chunk, root: str | None) -> Path:
        result: Path = self._handle.verify_source.remote(chunk, root).result()
        return result

    def info(self) -> dict[str, Any]:
        result: dict[str, Any] = self._handle.info.remote().result()
        return result

    def validate(self) -> AuditReport:
        result: AuditReport = self._handle.validate.remote().result()
        return result

    def holdings(self) -> tuple[list[str], list[str]]:
        result: tuple[list[str], list[str]] = self._handle.holdings.remote().result()
        return result

    def close(self) -> None:
        return None


class CollectionIngress:
    """The HTTP ingress: the collection with remote shards, behind the app of ``urna serve``."""

    async def __init__(  # type: ignore[misc]  # Ray Serve awaits an async constructor
        self,
        name: str,
        folder: str,
        catalog: bytes,
        shards: list[Any],
        token: str | None,
        max_rps: float,
    ) -> None:
        parsed = parse_catalog(json.loads(catalog))
        facts = await asyncio.gather(*(h.facts.remote() for h in shards))
        files = parsed.files
        if [f[1] for f in facts] != [e.content_hash for e in files]:
            raise FormatError(
                "a shard deployment serves another file than the catalog names",
                check=19,
                section="catalog.json",
            )
        remote = [
            RemoteShard(h, f).retired([(lo, hi) for _, lo, hi in e.deleted])
            for h, f, e in zip(shards, facts, files, strict=True)
        ]
        collection = Collection(Path(folder), parsed, Catalog.version_of(catalog), remote)
        self.dbs = Databases()
        self.dbs.corpora[name] = collection
        self.token = token
        self.max_rps = max_rps

    def __serve_build_asgi_app__(self) -> Any:
        from urna.server.app import create_app

        return create_app(self.dbs, token=self.token, max_rps=self.max_rps, mcp=False)


def _serve() -> Any:
    try:
        import ray
        from ray import serve
    except ImportError:
        raise missing_extra("ray[serve]", "ray") from None
    return ray, serve


def parse_places(values: Sequence[str]) -> dict[int, str]:
    """``INDEX=RESOURCE``: shard INDEX runs on a node started with that custom resource."""
    places: dict[int, str] = {}
    for value in values:
        index, sep, resource = value.partition("=")
        if not sep or not index.isdigit() or not resource:
            raise UrnaError(f"--place takes INDEX=RESOURCE, got {value!r}")
        places[int(index)] = resource
    return places


def serve_on_ray(
    folder: Path,
    *,
    address: str,
    host: str,
    port: int,
    token: str | None,
    max_rps: float,
    places: dict[int, str],
) -> None:
    """Deploy the collection at ``folder`` on Ray Serve and block until interrupted."""
    ray, serve = _serve()
    catalog, raw = read_catalog(folder)
    files = [e for e in catalog.shards if e.file]
    unknown = set(places) - {e.index for e in files}
    if unknown:
        raise UrnaError(f"--place names shard {min(unknown)}, which has no file")
    local = address == "local"
    connect(ray, address)
    name = folder.resolve().name
    try:
        serve.start(http_options={"host": host, "port": port})
        shard_cls = serve.deployment(ShardServer)
        bound = []
        for e in catalog.files:  # the shards (placeable), then the segments
            options: dict[str, Any] = {"num_cpus": 0.5}
            segment = e in catalog.segments
            if not segment and e.index in places:
                options["resources"] = {places[e.index]: 0.001}
            label = f"segment-{e.index}" if segment else f"shard-{e.index}"
            deployment = shard_cls.options(name=label, ray_actor_options=options)
            bound.append(deployment.bind(str(shard_path(folder, str(e.file)).resolve()), "full"))
        ingress = serve.deployment(serve.ingress()(CollectionIngress)).options(
            name="ingress", ray_actor_options={"num_cpus": 0.5}
        )
        app = ingress.bind(name, str(folder.resolve()), raw, bound, token, max_rps)
        serve.run(app, name=f"urna-{name}", route_prefix="/", blocking=False)
        print(f"serving {name} on Ray Serve at http://{host}:{port}/", file=sys.stderr, flush=True)
        _wait()
    finally:
        try:
            if not local:  # leave the cluster as it was; a local one goes away whole
                serve.delete(f"urna-{name}")
        finally:
            ray.shutdown()


def _wait() -> None:
    """Until SIGTERM or Ctrl-C."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        while not stop.wait(0.2):
            pass


__all__ = ["parse_places", "serve_on_ray"]
