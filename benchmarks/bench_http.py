"""Load on loopback: concurrent clients against urna serve for a bounded time per route.

Starts `urna serve` on a free loopback port over the quickstart corpus (built
first if needed), then for each route runs N client threads with keep-alive
connections for a fixed number of seconds and reports requests per second,
p50/p99 latency and failures. /api/health is the HTTP stack's ceiling.

    python benchmarks/bench_http.py [--clients 8] [--seconds 10]
    python benchmarks/bench_http.py --embedders   # /v1/search hybrid by query embedder
    python benchmarks/bench_http.py --repeats     # half the queries repeated: cache off, on

``--embedders`` serves the same file three times, one query embedder each, and loads
/v1/search (hybrid: one query embedding per request): sentence-transformers in float32
(before issue 11), sentence-transformers under bfloat16 autocast, and the numpy encoder
(now; ``URNA_FAST_QUERY``), each with the query cache off (it would answer the six
repeated queries from memory).
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "quickstart" / "spec.toml"
QUERIES = [
    "how do I install urna on Linux",
    "what does the model gate compare",
    "verify a citation against its source",
    "rebuild after editing one file",
    "section paths of chunks",
    "uninstall and cache folder",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load(
    port: int, paths: list[str], clients: int, seconds: float, spread: bool = False
) -> dict[str, float]:
    """Requests per second etc. of ``clients`` threads cycling through ``paths``; with
    ``spread`` each starts at its own share of the list (no two ask the same path at once)."""
    latencies: list[float] = []
    failures = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(offset: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine, bad = [], 0
        i = offset * (len(paths) // clients) if spread else offset
        while time.monotonic() < deadline:
            path = paths[i % len(paths)]
            i += 1
            t0 = time.perf_counter()
            try:
                conn.request("GET", path)
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    bad += 1
            except (OSError, http.client.HTTPException):
                bad += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            mine.append(time.perf_counter() - t0)
        conn.close()
        with lock:
            latencies.extend(mine)
            failures[0] += bad

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "rps": len(ordered) / elapsed,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[int(0.99 * (len(ordered) - 1))] * 1000,
        "failures": failures[0],
    }


EXE = [sys.executable, "-m", "urna"]
EMBEDDERS = {
    "sentence-transformers float32 (before)": {
        "URNA_FAST_QUERY": "0",
        "URNA_EMBED_PRECISION": "float32",
    },
    "sentence-transformers bfloat16": {"URNA_FAST_QUERY": "0", "URNA_EMBED_PRECISION": "auto"},
    "numpy encoder (now)": {"URNA_FAST_QUERY": "1"},
}


def start(corpus: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    server = subprocess.Popen(
        [*EXE, "serve", str(corpus), "--port", str(port), "--max-rps", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    for _ in range(600):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.1)
    return server, port


def stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(timeout=20)


def by_embedder(corpus: Path, clients: int, seconds: float) -> None:
    paths = [
        f"/v1/search?db={corpus.stem}&q={urllib.parse.quote(x)}&limit=5&mode=hybrid"
        for x in QUERIES
    ]
    print(f"/v1/search hybrid, {clients} clients, {seconds:.0f} s each, loopback, 2 cores")
    print(f"{'query embedder':<40} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'failed':>7}")
    for name, env in EMBEDDERS.items():
        server, port = start(corpus, {**env, "URNA_QUERY_CACHE": "0"})  # the embedder, each time
        try:
            load(port, paths, 2, 2.0)  # load the model
            r = load(port, paths, clients, seconds)
        finally:
            stop(server)
        print(
            f"{name:<40} {r['rps']:>9.1f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
            f"{r['failures']:>7}"
        )


SHARED = ROOT.parent / "shared" / "data" / "scifact"


def repeated(corpus: Path, clients: int, seconds: float) -> None:
    """/v1/search hybrid where every other request repeats one of 20 queries and the rest are
    each asked once (scifact's train and test queries, then numbered variants), with the
    query-embedding cache off (URNA_QUERY_CACHE=0, before) and on (after)."""
    import json

    texts = [
        json.loads(line)["text"]
        for name in ("queries_train.jsonl", "queries.jsonl")
        for line in (SHARED / name).read_text().splitlines()
        if line.strip()
    ]
    fresh = texts + [f"{t} ({n})" for n in range(1, 40) for t in texts]
    pool = texts[:20]
    order = [pool[i // 2 % len(pool)] if i % 2 else fresh[i // 2] for i in range(2 * len(fresh))]
    paths = [
        f"/v1/search?db={corpus.stem}&q={urllib.parse.quote(x)}&limit=5&mode=hybrid" for x in order
    ]
    print(f"/v1/search hybrid, half the queries repeated, {clients} clients, {seconds:.0f} s")
    print(f"{'query cache':<24} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'failed':>7}")
    rates = {}
    for name, env in (("off (before)", {"URNA_QUERY_CACHE": "0"}), ("on (after)", {})):
        server, port = start(corpus, env)
        try:
            load(port, paths[-40:], 2, 2.0)  # load the model (queries the run never asks)
            r = load(port, paths, clients, seconds, spread=True)
        finally:
            stop(server)
        rates[name] = r["rps"]
        print(
            f"{name:<24} {r['rps']:>9.1f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
            f"{r['failures']:>7}"
        )
    print(f"after / before: {rates['on (after)'] / rates['off (before)']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--embedders", action="store_true", help="/v1/search per embedder")
    parser.add_argument(
        "--repeats", action="store_true", help="/v1/search, half repeated, cache off and on"
    )
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="urna-bench-http-")
    corpus = Path(tmp.name) / "quickstart.urna"
    subprocess.run(
        [*EXE, "build", str(SPEC), "-o", str(corpus)], check=True, stdout=subprocess.DEVNULL
    )
    if args.embedders or args.repeats:
        try:
            chosen = repeated if args.repeats else by_embedder
            chosen(corpus, args.clients, args.seconds)
        finally:
            tmp.cleanup()
        return
    server, port = start(corpus, {})
    try:
        db = corpus.stem
        routes = {
            "/api/health": ["/api/health"],
            "/api/search": [
                f"/api/search?db={db}&q={urllib.parse.quote(x)}&limit=5" for x in QUERIES
            ],
            "/v1/search": [
                f"/v1/search?db={db}&q={urllib.parse.quote(x)}&limit=5" for x in QUERIES
            ],
            "/api/keyword": [
                f"/api/keyword?db={db}&q={urllib.parse.quote(x)}&limit=5" for x in QUERIES
            ],
        }
        load(port, routes["/v1/search"], 2, 2.0)  # warm the model
        print(f"{args.clients} clients, {args.seconds:.0f} s per route, loopback, 2 cores")
        print(
            f"{'route':<14} {'requests':>9} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'failed':>7}"
        )
        for name, paths in routes.items():
            r = load(port, paths, args.clients, args.seconds)
            print(
                f"{name:<14} {r['requests']:>9} {r['rps']:>9.1f} {r['p50_ms']:>8.2f} "
                f"{r['p99_ms']:>8.2f} {r['failures']:>7}"
            )
    finally:
        stop(server)
        tmp.cleanup()


if __name__ == "__main__":
    main()
