"""A million chunks: one file against a 16-shard collection of the same chunks.

    python benchmarks/bench_million.py [--chunks 1000000] [--shards 16] [--jobs 2]
                                       [--queries 200] [--keep DIR] [--json OUT.json]
    python benchmarks/bench_million.py --keep DIR --json OUT.json --again

``--again`` measures the kept builds anew (after a change to the query paths), keeping the
build figures the report already holds. Each target is measured in its own fresh process
(latency, memory), then both side by side in a third (``side_by_side``: each query asked of
both in turn), whose ratios the machine's drift between processes does not move.

The text is real-looking: records of two to four sentences drawn (seeded) from the sentences
of the three shared collections (SciFact, NFCorpus, Cranfield), so BM25 sees their words at
their own frequencies; each record is one chunk. It is embedded by the static model
(minilm-static), which stands in for the transformer as issue 22 allows. For each target it
reports the build's wall time and peak resident memory, the bytes on disk, and, in a fresh
process that opens it and answers queries, latency p50/p99 per mode and that process's
resident memory (anonymous and file-backed: mapped sections count once touched).

Queries: for vectors, stored vectors of a seeded sample of chunks, nudged by noise (as
``urna benchmark`` does); for words and hybrid, the first words of the same chunks' text.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

URNA = str(Path(sys.executable).parent / "urna")
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SETS = ("scifact", "nfcorpus", "cranfield")
FILES = 64  # JSONL files the records are spread over
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z(])")


def sentences() -> list[str]:
    """Every sentence of 4 to 60 words in the shared collections' corpora."""
    pool: list[str] = []
    for name in SETS:
        with open(DATA / name / "corpus.jsonl", encoding="utf-8") as f:
            for line in f:
                text = json.loads(line).get("text", "")
                for s in SENTENCE.split(" ".join(text.split())):
                    if 4 <= len(s.split()) <= 60:
                        pool.append(s)
    return pool


def write_corpus(folder: Path, n: int, seed: int = 0) -> int:
    """``n`` records over ``FILES`` JSONL files; returns the bytes written."""
    pool = sentences()
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    per_file = -(-n // FILES)
    written = 0
    for f in range(FILES):
        lines = []
        for i in range(f * per_file, min(n, (f + 1) * per_file)):
            text = " ".join(rng.choice(pool) for _ in range(rng.randint(2, 4)))
            lines.append(json.dumps({"_id": f"r{i}", "text": text}))
        data = ("\n".join(lines) + "\n").encode("utf-8")
        (folder / f"records-{f:02d}.jsonl").write_bytes(data)
        written += len(data)
    return written


def run_measured(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak resident bytes of ``cmd``'s process (or of a worker it reaped)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err.decode(errors='replace')}")
    # Linux folds the peak of the child's own reaped workers (--jobs) into its ru_maxrss.
    return seconds, usage.ru_maxrss * 1024


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def memory() -> dict[str, int]:
    """This process's resident memory from /proc (bytes)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def measure(target: str, n_queries: int) -> dict[str, Any]:
    """Open ``target`` in this (fresh) process, time each mode, report latency and memory."""
    import numpy as np

    import urna
    from urna import Query

    t0 = time.perf_counter()
    corpus = urna.open(target)
    opened = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    sample = rng.choice(corpus.n_chunks, size=n_queries, replace=False).tolist()
    vectors = [
        corpus.embedding(i) + 0.05 * rng.standard_normal(corpus.dim).astype(np.float32)
        for i in sample
    ]
    texts = [" ".join(corpus.chunk(i).text.split()[:6]) for i in sample]
    modes = {
        "exact": (vectors, lambda v: corpus.run(Query(vector=v, k=10, method="exact"))),
        "hnsw": (vectors, lambda v: corpus.run(Query(vector=v, k=10, method="ann"))),
        "bm25": (texts, lambda t: corpus.run(Query(text=t, k=10, mode="text"))),
        "hybrid": (texts, lambda t: corpus.run(Query(text=t, k=10, mode="hybrid"))),
    }
    report: dict[str, Any] = {"chunks": corpus.n_chunks, "open_s": opened, "modes": {}}
    for name, (inputs, fn) in modes.items():
        result = fn(inputs[0])  # warm: the model loads, pages fault in
        times = []
        for x in inputs:
            t = time.perf_counter()
            fn(x)
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        report["modes"][name] = {
            "index_type": result.index_type,
            "p50_ms": statistics.median(times),
            "p99_ms": times[min(len(times) - 1, int(0.99 * len(times)))],
        }
    exact = [{h.ordinal for h in modes["exact"][1](v).hits} for v in vectors]
    ann = [{h.ordinal for h in modes["hnsw"][1](v).hits} for v in vectors]
    found = sum(len(a & e) for a, e in zip(ann, exact, strict=True))
    report["hnsw_recall"] = found / (10 * len(vectors))
    report["memory"] = memory()
    corpus.close()
    return report


def side_by_side(one_path: str, col_path: str, n_queries: int) -> dict[str, Any]:
    """The two targets open in this (fresh) process, each query asked of both in turn (which
    first alternates), so both see the same machine from moment to moment: the ratio of
    medians that the separate processes above give only as well as the machine stays
    still between them (on this machine, 1.2x to 1.9x apart for one collection's BM25)."""
    import numpy as np

    import urna
    from urna import Query

    one, col = urna.open(one_path), urna.open(col_path)
    rng = np.random.default_rng(1)
    sample = rng.choice(one.n_chunks, size=n_queries, replace=False).tolist()
    vectors = [
        one.embedding(i) + 0.05 * rng.standard_normal(one.dim).astype(np.float32) for i in sample
    ]
    texts = [" ".join(one.chunk(i).text.split()[:6]) for i in sample]
    modes = {
        "exact": (vectors, lambda v: Query(vector=v, k=10, method="exact")),
        "hnsw": (vectors, lambda v: Query(vector=v, k=10, method="ann")),
        "bm25": (texts, lambda t: Query(text=t, k=10, mode="text")),
        "hybrid": (texts, lambda t: Query(text=t, k=10, mode="hybrid")),
    }
    out: dict[str, Any] = {}
    for name, (inputs, make) in modes.items():
        one.run(make(inputs[0]))
        col.run(make(inputs[0]))
        times: dict[int, list[float]] = {0: [], 1: []}
        for i, x in enumerate(inputs):
            query = make(x)
            for side in (0, 1) if i % 2 else (1, 0):
                t = time.perf_counter()
                (one, col)[side].run(query)
                times[side].append((time.perf_counter() - t) * 1000)
        a, b = statistics.median(times[0]), statistics.median(times[1])
        out[name] = {"one_p50_ms": a, "col_p50_ms": b, "ratio": b / a}
    one.close()
    col.close()
    return out


def compared(root: Path, label: str, queries: int) -> dict[str, Any]:
    """``side_by_side`` of the kept builds in a fresh process."""
    found = subprocess.run(
        [
            sys.executable,
            __file__,
            "--side-by-side",
            str(root / "one.urna"),
            str(root / "col"),
            "--queries",
            str(queries),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    got = json.loads(found.stdout)
    print(f"side by side in one process, each query asked of both in turn ({label}):")
    for mode, m in got.items():
        print(
            f"{mode:<7} one {m['one_p50_ms']:8.2f}ms  shards {m['col_p50_ms']:8.2f}ms  "
            f"{m['ratio']:5.2f}x"
        )
    return got


def measured(out: Path, queries: int) -> dict[str, Any]:
    """``measure`` of ``out`` in a fresh process."""
    found = subprocess.run(
        [sys.executable, __file__, "--measure", str(out), "--queries", str(queries)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(found.stdout)


def show(report: dict[str, Any]) -> None:
    for label, got in report["targets"].items():
        mem, seconds, peak = got["memory"], got["build_s"], got["build_peak_rss"]
        print(
            f"{label}: {got['chunks']:,} chunks, build {seconds:.0f} s (peak {mb(peak)}), "
            f"{mb(got['bytes'])} on disk, opened in {got['open_s'] * 1000:.0f} ms; serving: "
            f"RSS {mb(mem['VmRSS'])} ({mb(mem['RssAnon'])} anonymous, "
            f"{mb(mem['RssFile'])} mapped), HNSW recall@10 {got['hnsw_recall']:.3f}"
        )
    one, col = report["targets"].values()
    print(f"{'mode':<7} {'one p50':>9} {'p99':>9} {'shards p50':>11} {'p99':>9}  ratio p50")
    for mode in one["modes"]:
        a, b = one["modes"][mode], col["modes"][mode]
        ratio = b["p50_ms"] / a["p50_ms"]
        print(
            f"{mode:<7} {a['p50_ms']:8.2f}ms {a['p99_ms']:8.2f}ms {b['p50_ms']:10.2f}ms "
            f"{b['p99_ms']:8.2f}ms  {ratio:5.2f}x  ({a['index_type']} / {b['index_type']})"
        )


def mb(n: float) -> str:
    return f"{n / 1e6:,.0f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="Work here and keep the files.")
    parser.add_argument("--json", type=Path, help="Also write the report here.")
    parser.add_argument("--again", action="store_true", help="Re-measure kept builds.")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # the fresh process's part
    parser.add_argument("--side-by-side", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.queries)))
        return
    if args.side_by_side:
        print(json.dumps(side_by_side(*args.side_by_side, args.queries)))
        return
    if args.again:
        if not (args.keep and args.json and args.json.exists()):
            raise SystemExit("--again needs --keep DIR and the --json report of its builds")
        report = json.loads(args.json.read_text())
        for label, got in report["targets"].items():
            out = args.keep / ("one.urna" if label == "one file" else "col")
            got.update(measured(out, args.queries), bytes=size_of(out))  # as it is now
        show(report)
        report["side_by_side"] = compared(args.keep, "16 shards", args.queries)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        docs = root / "docs"
        t0 = time.perf_counter()
        text_bytes = write_corpus(docs, args.chunks)
        print(
            f"{args.chunks:,} records, {mb(text_bytes)} of JSONL ({time.perf_counter() - t0:.0f} s)"
        )
        targets = {
            "one file": (root / "one.urna", []),
            f"{args.shards} shards": (
                root / "col",
                ["--shards", str(args.shards), "--jobs", str(args.jobs)],
            ),
        }
        report: dict[str, Any] = {"chunks": args.chunks, "text_bytes": text_bytes, "targets": {}}
        for label, (out, extra) in targets.items():
            cmd = [URNA, "build", str(docs), "-o", str(out), "--model", "minilm-static", *extra]
            seconds, peak = run_measured(cmd)
            got = measured(out, args.queries)
            got.update(build_s=seconds, build_peak_rss=peak, bytes=size_of(out))
            report["targets"][label] = got
        show(report)
        report["side_by_side"] = compared(root, f"{args.shards} shards", args.queries)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
