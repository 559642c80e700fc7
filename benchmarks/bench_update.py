"""A living collection: how long from saving an edited document to its new text being the
top hit, against a full build; and query latency with 10 segments against compacted.

    python benchmarks/bench_update.py [--docs 25000] [--shards 4]

Documents are generated (about four chunks each) and embedded with the static model
(minilm-static). The watch path runs the server's own ``Watcher`` in this process (the
model loaded, the collection served from ``Databases``) and polls what a request would
get; the CLI path runs ``urna build SOURCES -o DIR`` as a new process, model load included.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import urna
from bench_fanout import WORDS as FANOUT_WORDS
from urna.build.spec import spec_from_args
from urna.build.writer import build_folder, compact_folder
from urna.server.databases import Databases
from urna.server.watch import Watch, Watcher

MODEL = ("--model", "minilm-static")
# The fan-out benchmark's vocabulary, and words of the documents people keep.
KEPT = ["segment", "merge", "version", "history", "bees", "hive", "queen", "router"]
WORDS = [*FANOUT_WORDS, *KEPT]


def write_docs(folder: Path, n: int, rng: random.Random) -> None:
    folder.mkdir(parents=True)
    for i in range(n):
        paras = [" ".join(rng.choices(WORDS, k=180)) + "." for _ in range(4)]
        (folder / f"doc{i:06d}.md").write_text(f"# Document {i}\n\n" + "\n\n".join(paras))


def latency(col: urna.Collection, queries: list[str], mode: str) -> float:
    times = []
    for text in queries:
        t0 = time.perf_counter()
        col.search_text(text, k=10, mode=mode)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=25_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--profile", action="store_true", help="Profile one watch update.")
    args = parser.parse_args()
    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        docs, out = root / "docs", root / "bench"
        write_docs(docs, args.docs, rng)
        t0 = time.perf_counter()
        spec = spec_from_args([docs], out, model="minilm-static")
        summary = build_folder(spec, shards=args.shards)
        full = time.perf_counter() - t0
        print(f"full build: {summary.chunks} chunks in {args.shards} shards, {full:.1f} s")

        dbs = Databases()
        watcher = Watcher(dbs, [Watch("bench", docs)], root, model="minilm-static")
        assert watcher.folder(Watch("bench", docs)) == out
        watcher.build(Watch("bench", docs))  # opens what is there: nothing changed
        waits = []
        for n in range(5):
            word = f"zyzzyva{n}quux"
            target = docs / f"doc{rng.randrange(args.docs):06d}.md"
            t0 = time.perf_counter()
            target.write_text(target.read_text() + f"\n\nA {word} note about {word}.\n")
            if args.profile and n == 4:
                profile = cProfile.Profile()
                profile.runcall(watcher.build, Watch("bench", docs))
                pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
            else:
                watcher.build(Watch("bench", docs))
            served = dbs.get("bench")
            assert served is not None
            hit = served.search_text(word, k=1, mode="text").hits
            waits.append(time.perf_counter() - t0)
            assert hit and hit[0].source_uri.endswith(target.name)
        print(
            f"watch: save to top hit, median of 5: {statistics.median(waits):.3f} s "
            f"({statistics.median(waits) / full:.4f}x the full build); polling adds up to "
            f"the --interval (0.25 s)"
        )

        target = docs / "doc000001.md"
        target.write_text(target.read_text() + "\n\nOne more paragraph for the CLI.\n")
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "urna", "build", str(docs), "-o", str(out), *MODEL],
            check=True,
            capture_output=True,
        )
        cli = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import urna.cli.app; from urna.embed.registry import "
                "resolve; m = resolve('minilm-static'); m.count_tokens('a'); m.embed(['a'])",
            ],
            check=True,
        )
        load = time.perf_counter() - t0
        print(f"cli update: {cli:.2f} s; the process and model load alone {load:.2f} s")

        for n in range(10 - len(urna.open(out).catalog.segments)):
            target = docs / f"doc{n:06d}.md"
            target.write_text(target.read_text() + f"\n\nSegment {n}.\n")
            build_folder(spec, shards=args.shards, merge=False)
        queries = [" ".join(rng.choices(WORDS, k=4)) for _ in range(50)]
        with urna.open(out) as col:
            segments = len(col.catalog.segments)
            with_segments = {m: latency(col, queries, m) for m in ("text", "vector")}
        compact_folder(out)
        with urna.open(out) as col:
            compacted = {m: latency(col, queries, m) for m in ("text", "vector")}
        for mode in ("text", "vector"):
            print(
                f"{mode} p50: {with_segments[mode]:.2f} ms with {segments} segments, "
                f"{compacted[mode]:.2f} ms compacted "
                f"({with_segments[mode] / compacted[mode]:.2f}x)"
            )


if __name__ == "__main__":
    main()
