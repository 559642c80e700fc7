"""Shards on Ray Serve asked from one search core: each remote shard in a thread of its own
(the core since December 5) against one after another, in one run, over the same deployments.

A collection of scifact records (``--docs``, ``--shards`` shards, all-MiniLM-L6-v2 or
``--model static``) is built; one Ray Serve deployment per shard file
(``server/ray_serve.py``'s ``ShardServer``, on a local Ray instance in a loopback-only
network namespace, as root) answers the core's calls, as on ``urna serve --ray``. Each
query (scifact's test claims) is asked in turn:

- ``in turn``: the shards one after another (``threads = "never"``), as before;
- ``at once``: each shard in a thread of its own, on every per-shard call: what the core
  does;
- ``local``: the local core over the same files.

The answers must be the same bits; the median latency per mode is reported, with the ratio
of the core's way to ``in turn``. What Ray adds per call is a round trip between processes;
on this machine's 2 cores the deployments share the cores with the driver, where a cluster's
nodes would not.

    python benchmarks/bench_ray_serve.py [--docs 2000] [--shards 4] [--queries 100] [--model]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCIFACT = HERE.parents[1] / "shared" / "data" / "scifact"
URNA = str(Path(sys.executable).parent / "urna")
INSIDE = "URNA_BENCH_NAMESPACE"
# one after another; each shard in a thread; the local core over the same files
POLICIES = ("in turn", "at once", "local")


def in_namespace(argv: list[str]) -> int:
    """Run this script again inside a new loopback-only network namespace; every process
    left in it is killed and the namespace deleted after."""
    ns = f"urna-bench-ray-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
        env = dict(os.environ, **{INSIDE: ns}, RAY_USAGE_STATS_ENABLED="0")
        cmd = ["ip", "netns", "exec", ns, sys.executable, __file__, *argv]
        return subprocess.run(cmd, env=env).returncode
    finally:
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        for pid in pids.stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), 9)
        subprocess.run(["ip", "netns", "del", ns], check=False)


def build(folder: Path, docs: int, shards: int, model: str) -> Path:
    source = folder / "scifact.jsonl"
    lines = (SCIFACT / "corpus.jsonl").read_text().splitlines()[:docs]
    source.write_text("\n".join(lines) + "\n")
    out = folder / "col"
    cmd = [URNA, "build", str(source), "-o", str(out), "--shards", str(shards), "--model", model]
    env = dict(os.environ, URNA_CACHE_DIR=str(folder / "cache"))
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return out


def deploy(files: list[Path]) -> list[Any]:
    """One Ray Serve deployment per shard file; the core's remote shards over them."""
    import ray
    from ray import serve

    from urna.server.ray_serve import RemoteShard, ShardServer

    ray.init(
        address="local",
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",  # the namespace has only loopback
    )
    serve.start(http_options={"host": "127.0.0.1", "port": 8765})
    shard_cls = serve.deployment(ShardServer)
    cpus = min(0.5, 1.5 / len(files))  # every deployment placed on 2 cores, the driver aside
    remote = []
    for i, path in enumerate(files):
        app = shard_cls.options(name=f"shard-{i}", ray_actor_options={"num_cpus": cpus})
        handle = serve.run(app.bind(str(path), "full"), name=f"shard-{i}", route_prefix=None)
        remote.append(RemoteShard(handle, handle.facts.remote().result()))
    return remote


def answer(searcher: Any, query: Any) -> tuple[float, list[Any]]:
    t0 = time.perf_counter()
    result = searcher.run(query)
    took = (time.perf_counter() - t0) * 1000
    return took, [(h.chunk_id, h.score.hex(), h.source_uri) for h in result.hits]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--model", default="minilm", help="minilm (the default) or static")
    args = parser.parse_args()
    if os.environ.get(INSIDE) is None:
        if os.geteuid() != 0 or shutil.which("ip") is None:
            sys.exit("needs root and iproute2 for a loopback-only network namespace")
        sys.exit(in_namespace(sys.argv[1:]))

    from urna import Query
    from urna.search.core import Searcher
    from urna.search.corpus import open_shard

    with tempfile.TemporaryDirectory(prefix="urna-bench-ray-") as tmp:
        col = build(Path(tmp), args.docs, args.shards, args.model)
        files = sorted(col.glob("*.urna"))
        texts = [
            json.loads(line)["text"]
            for line in (SCIFACT / "queries.jsonl").read_text().splitlines()[: args.queries]
        ]
        remote = Searcher(deploy(files))  # Ray first: started after usearch loads, it aborts
        local = Searcher([open_shard(p) for p in files])
        chunks = int(local.offsets[-1])
        print(f"{len(files)} shards on Ray Serve, {chunks:,} chunks, {len(texts)} queries")
        print(f"{'mode':<8} {'in turn':>9} {'at once':>9} {'ratio':>6} {'local':>8}")
        for mode in ("hybrid", "text", "vector"):
            times: dict[str, list[float]] = {p: [] for p in POLICIES}
            queries = [Query(text=t, k=10, mode=mode) for t in texts]
            answer(remote, queries[0])  # the deployments warm, the query model loaded
            answer(local, queries[0])
            for q in queries:
                ms, expected = answer(local, q)
                times["local"].append(ms)
                for policy in POLICIES[:2]:
                    remote.threads = "never" if policy == "in turn" else "auto"
                    ms, got = answer(remote, q)
                    times[policy].append(ms)
                    if got != expected:
                        sys.exit(f"{mode} {policy}: the remote answer differs for {q.text!r}")
            turn, once, alone = (statistics.median(times[p]) for p in POLICIES)
            print(f"{mode:<8} {turn:7.2f}ms {once:7.2f}ms {once / turn:5.2f}x {alone:6.2f}ms")
        print("every remote answer: the local core's bits")


if __name__ == "__main__":
    main()
