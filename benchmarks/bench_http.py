"""Load on loopback: concurrent clients against urna serve for a bounded time per route.

Starts `urna serve` on a free loopback port over the quickstart corpus (built
first if needed), then for each route runs N client threads with keep-alive
connections for a fixed number of seconds and reports requests per second,
p50/p99 latency and failures. /api/health is the HTTP stack's ceiling.

    python benchmarks/bench_http.py [--clients 8] [--seconds 10]
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


def load(port: int, paths: list[str], clients: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    failures = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(offset: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine, bad, i = [], 0, offset
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    exe = [sys.executable, "-m", "urna"]
    tmp = tempfile.TemporaryDirectory(prefix="urna-bench-http-")
    corpus = Path(tmp.name) / "quickstart.urna"
    subprocess.run(
        [*exe, "build", str(SPEC), "-o", str(corpus)], check=True, stdout=subprocess.DEVNULL
    )
    port = free_port()
    server = subprocess.Popen(
        [*exe, "serve", str(corpus), "--port", str(port), "--max-rps", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    try:
        for _ in range(600):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
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
        server.terminate()
        server.wait(timeout=20)
        tmp.cleanup()


if __name__ == "__main__":
    main()
