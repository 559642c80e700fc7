"""A document build against plain float32 sentence-transformers, whole processes each.

1,000 scifact records, an empty embedding cache. Whole processes, timed from start to exit
(imports and model load included):

1. ``urna build`` with the default precision (``auto``: int8 where the CPU has VNNI, else
   bfloat16 where it has native bf16, else float32) and an empty cache folder: on an int8
   CPU, the one-time ONNX export and its check included (a machine's first build);
2. the same again with that export in the cache (the embedding cache emptied): what every
   later default build pays;
3. ``urna build --precision bfloat16`` and 4. ``--precision float32``;
5. the peer: a script that imports sentence-transformers, loads the same MiniLM folder and
   embeds the same texts the build embedded (each chunk in its context), in float32.

It also reports how close each build's vectors are to the peer's (cosine).

    python benchmarks/bench_embed_precision.py [--records 1000] [--json OUT]
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

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

PEER = """
import sys, time, json, numpy as np
from sentence_transformers import SentenceTransformer
texts = json.load(open(sys.argv[1]))
model = SentenceTransformer(sys.argv[2], device="cpu")
order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
vectors = model.encode([texts[i] for i in order], batch_size=64, normalize_embeddings=True,
                       convert_to_numpy=True, show_progress_bar=False)
out = np.empty_like(vectors)
out[order] = vectors
np.save(sys.argv[3], out)
"""


def timed(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import numpy as np

    import urna
    from urna.embed.hub import bundled_minilm
    from urna.ingest.context import embedded_texts

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        lines = (DATA / "scifact" / "corpus.jsonl").read_text().splitlines()[: args.records]
        records = work / "records.jsonl"
        records.write_text("\n".join(lines) + "\n")
        times, files = {}, {}
        runs = (
            ("urna build (default), first (export included)", "auto", "auto-first"),
            ("urna build (default)", "auto", "auto"),
            ("urna build bfloat16", "bfloat16", "bfloat16"),
            ("urna build float32", "float32", "float32"),
        )
        for label, precision, name in runs:
            cache = work / f"cache-{precision}"
            for stale in cache.glob("embeddings.sqlite*"):  # vectors are never reused
                stale.unlink()
            env = {**os.environ, "URNA_CACHE_DIR": str(cache), "URNA_EMBED_PRECISION": precision}
            files[label] = work / f"{name}.urna"
            times[label] = timed(
                [sys.executable, "-m", "urna", "build", str(records), "-o", str(files[label])],
                env,
            )
        with urna.open(files["urna build (default)"]) as corpus:
            chunks = [corpus.chunk(i) for i in range(corpus.n_chunks)]
            precision = corpus.manifest.get("embed_precision")
        texts = work / "texts.json"
        texts.write_text(json.dumps(embedded_texts(chunks)))
        peer_out = work / "peer.npy"
        times["sentence-transformers float32 (peer)"] = timed(
            [sys.executable, "-c", PEER, str(texts), str(bundled_minilm()), str(peer_out)],
            dict(os.environ),
        )
        peer_vectors = np.load(peer_out)
        cosines = {}
        for label, path in files.items():
            with urna.open(path) as corpus:
                built = np.stack([corpus.embedding(i) for i in range(corpus.n_chunks)])
            cosines[label] = np.sum(built * peer_vectors, axis=1)
    peer = times["sentence-transformers float32 (peer)"]
    print(f"{args.records} scifact records, {len(chunks)} chunks; default precision: {precision}")
    print("| process | seconds | vs peer | cosine to the peer's vectors (mean, min) |")
    print("|---|---:|---:|---|")
    for label, seconds in times.items():
        cos = cosines.get(label)
        close = f"{cos.mean():.4f}, {cos.min():.4f}" if cos is not None else ""
        print(f"| {label} | {seconds:.1f} | {seconds / peer:.2f}x | {close} |")
    if args.json is not None:
        report = {
            "records": args.records,
            "chunks": len(chunks),
            "default_precision": precision,
            "seconds": {k: round(v, 2) for k, v in times.items()},
            "vs_peer": {k: round(v / peer, 3) for k, v in times.items()},
            "cosine_to_peer": {
                k: {"mean": round(float(c.mean()), 5), "min": round(float(c.min()), 5)}
                for k, c in cosines.items()
            },
        }
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
