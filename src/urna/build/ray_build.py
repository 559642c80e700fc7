"""Building shards on Ray (the extra ``urna[ray]``): one shard per task, on actors that load
the model once each. Tasks carry file paths and return the catalog's facts of a shard, never
vectors, so the folders (sources and output) must be visible at the same path on every node
(one machine, or a shared filesystem)."""

from __future__ import annotations

import os
import socket
from typing import Any

from urna.build.shard import ShardReport, ShardTask, build_shard
from urna.build.spec import BuildSpec
from urna.build.summary import Report
from urna.embed.base import THREADS_VARIABLE
from urna.errors import BuildError, UrnaError, missing_extra


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise missing_extra("ray", "ray") from None
    return ray


class ShardBuilder:
    """A Ray actor: the model, loaded once, and any number of shards built with it."""

    def __init__(self, model: str, model_path: str | None, precision: str | None = None) -> None:
        from urna.embed.registry import resolve

        os.environ[THREADS_VARIABLE] = "1"  # an actor per CPU: one thread each
        self.embedder = resolve(model, model_path=model_path, precision=precision)
        self.embedder.load()

    def build(self, task: ShardTask) -> ShardReport:
        return build_shard(task, self.embedder)


def connect(ray: Any, address: str | None) -> None:
    """Join the cluster at ``address``, or start a new local instance for ``local``."""
    if address != "local":
        _reachable(address or "")
    try:
        if address == "local":  # a new instance, never one a file in /tmp/ray points at
            ray.init(address="local", include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    except Exception as exc:  # Ray's own errors: unreachable, refused, bad token...
        raise UrnaError(f"cannot reach the Ray cluster at {address}: {exc}") from None


def _reachable(address: str, timeout: float = 10.0) -> None:
    """Fail fast on an address nothing listens on (Ray itself retries for minutes)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise UrnaError(f"a Ray address is HOST:PORT (or local), got {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise UrnaError(f"cannot reach the Ray cluster at {address}: {exc}") from None


def ray_runner(address: str | None, spec: BuildSpec, report: Report) -> Any:
    """A runner for ``Writer.build`` that builds each shard as one task on Ray.
    ``address``: ``local`` starts a Ray instance in this process's machine; anything else
    is the address of a running cluster (``ray start --head`` prints it)."""

    def run(tasks: list[ShardTask]) -> list[ShardReport]:
        ray = _ray()
        started = not ray.is_initialized()
        if started:
            connect(ray, address)
        try:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            count = max(1, min(len(tasks), cpus))
            actor = ray.remote(num_cpus=1)(ShardBuilder)
            model_path = str(spec.model_path) if spec.model_path else None
            precision = tasks[0].precision  # the writer's: every shard alike
            actors = [actor.remote(spec.model, model_path, precision) for _ in range(count)]
            report(f"ray: {len(tasks)} shards on {count} actors ({cpus} CPUs in the cluster)")
            pool = ray.util.ActorPool(actors)
            results = list(pool.map_unordered(lambda a, t: a.build.remote(t), tasks))
        except Exception as exc:
            cause = getattr(exc, "cause", None)  # a RayTaskError carries the task's own error
            if isinstance(cause, UrnaError):
                raise cause from None
            if isinstance(exc, UrnaError):
                raise
            raise BuildError(f"ray build failed: {type(exc).__name__}: {exc}") from None
        finally:
            if started:
                ray.shutdown()
        return sorted(results, key=lambda r: r.index)

    return run
