"""Exact search and full-check open, against their peers, on one machine in one run.

Peers: a bare numpy matmul + argpartition over the same memory-mapped matrix,
FAISS IndexFlatIP when installed, and `sha256sum` for the full-check open.

    python benchmarks/bench_exact.py            # 400,000 and 1,000,000 x 256, 100,000 x 384
    python benchmarks/bench_exact.py --quick    # 100,000 x 256 and 20,000 x 384

Prints a table and writes it as JSON next to the temporary files' folder
(``--json PATH``). Ratios above 1 mean urna is slower than the peer.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import mmap
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import urna
from timing import best_of, per_query
from urna.index.topk import top_k

QUERIES = 40
K = 10


def make_file(folder: Path, n: int, dim: int, dtype: str, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, dim), dtype=np.float32)
    chunks = [
        {
            "text": f"synthetic chunk {i}",
            "source_uri": f"bench/{i // 1000}.txt",
            "byte_start": (i % 1000) * 20,
            "byte_end": (i % 1000) * 20 + 18,
        }
        for i in range(n)
    ]
    path = folder / f"bench-{n}x{dim}-{dtype}.urna"
    urna.build(
        path,
        chunks,
        embeddings=matrix,
        model="bench/random",
        chunker_version="bench/1",
        model_hash="sha256:" + "0" * 64,
        dtype=dtype,
    )  # type: ignore[arg-type]
    return path


def bare_numpy(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    """The peer: the same float32 matrix mapped with np.memmap, matmul + argpartition."""
    with urna.open(path, verify="trusted") as corpus:
        emb = next(s for s in corpus.sections() if s.name == "embeddings")
        n, dim = corpus.n_chunks, corpus.dim
    matrix = np.memmap(path, dtype="<f4", mode="r", offset=emb.offset, shape=(n, dim))

    def search(q: np.ndarray) -> np.ndarray:
        q = (q / np.linalg.norm(q)).astype(np.float32)
        scores = matrix @ q
        idx = np.argpartition(-scores, K)[:K]
        return idx[np.argsort(-scores[idx])]

    return search


def faiss_flat(corpus: urna.Corpus) -> Callable[[np.ndarray], object] | None:
    try:
        import faiss
    except ImportError:
        return None
    index = faiss.IndexFlatIP(corpus.dim)
    block = 65536
    for start in range(0, corpus.n_chunks, block):
        stop = min(start + block, corpus.n_chunks)
        index.add(np.ascontiguousarray(corpus._c.matrix.rows(slice(start, stop))))

    def search(q: np.ndarray) -> object:
        q = (q / np.linalg.norm(q)).astype(np.float32)[None, :]
        return index.search(q, K)

    return search


def sha256sum(path: Path) -> float | None:
    exe = shutil.which("sha256sum")
    if exe is None:
        return None
    return best_of(lambda: subprocess.run([exe, str(path)], check=True, capture_output=True), 3)


def hashlib_pass(path: Path) -> float:
    """One OpenSSL SHA-256 pass over the memory-mapped file, from Python: the strongest peer."""

    def once() -> None:
        with (
            open(path, "rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m,
        ):
            hashlib.sha256(m).hexdigest()

    return best_of(once, 3)


def run_case(folder: Path, n: int, dim: int, rows: list[dict[str, object]]) -> None:
    rng = np.random.default_rng(42)
    queries = rng.standard_normal((QUERIES, dim)).astype(np.float32)
    t0 = time.perf_counter()
    path = make_file(folder, n, dim, "float32")
    print(
        f"# {n:,} x {dim} float32: built {path.stat().st_size / 2**20:.0f} MiB in "
        f"{time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )

    sha = sha256sum(path)
    one_pass = hashlib_pass(path)
    full = best_of(lambda: urna.open(path).close(), 3)
    trusted = best_of(lambda: urna.open(path, verify="trusted").close(), 3)
    rows.append(
        {
            "case": f"{n}x{dim}",
            "what": "open, full check",
            "urna_s": full,
            "peer": "sha256sum",
            "peer_s": sha,
            "ratio": full / sha if sha else None,
        }
    )
    rows.append(
        {
            "case": f"{n}x{dim}",
            "what": "open, full check",
            "urna_s": full,
            "peer": "hashlib.sha256, one pass",
            "peer_s": one_pass,
            "ratio": full / one_pass,
        }
    )
    rows.append(
        {
            "case": f"{n}x{dim}",
            "what": "open, trusted (structure only)",
            "urna_s": trusted,
            "peer": "sha256sum",
            "peer_s": sha,
            "ratio": trusted / sha if sha else None,
        }
    )

    corpus = urna.open(path)
    _ = corpus.content_hash  # computed once per open, on first use; not a per-query cost
    ours = per_query(lambda q: corpus.search(q, k=K), queries)
    numpy_search = bare_numpy(path)
    peer = per_query(numpy_search, queries)
    same = all(
        [h.ordinal for h in corpus.search(q, k=K).hits] == numpy_search(q).tolist()
        for q in queries[:5]
    )
    rows.append(
        {
            "case": f"{n}x{dim}",
            "what": "exact search k=10 float32",
            "urna_s": ours,
            "peer": "numpy matmul+argpartition",
            "peer_s": peer,
            "ratio": ours / peer,
            "same_hits": same,
        }
    )
    flat = faiss_flat(corpus)
    if flat is not None:
        fs = per_query(flat, queries)
        rows.append(
            {
                "case": f"{n}x{dim}",
                "what": "exact search k=10 float32",
                "urna_s": ours,
                "peer": "faiss IndexFlatIP (in RAM)",
                "peer_s": fs,
                "ratio": ours / fs,
            }
        )
    corpus.close()

    for dtype in ("float16", "int8"):
        qpath = make_file(folder, n, dim, dtype)
        with urna.open(qpath) as qc:
            _ = qc.content_hash
            t0 = time.perf_counter()
            qc.search(queries[0], k=K)  # the first query also computes the rows' norms
            first = time.perf_counter() - t0
            t = per_query(lambda q, qc=qc: qc.search(q, k=K), queries)
            matrix = qc._c.matrix  # the widening scan every query took before (same run)

            def widening(q: np.ndarray, matrix: Any = matrix) -> np.ndarray:
                q = (q / np.linalg.norm(q)).astype(np.float32)
                return top_k(matrix.dot(q), K)

            before = per_query(widening, queries)
            same = all(
                [h.ordinal for h in qc.search(q, k=K).hits] == widening(q).tolist()
                for q in queries[:10]
            )
        for what, value, ref, ref_s in (
            (f"exact search k=10 {dtype}", t, "numpy float32 matmul+argpartition", peer),
            (f"exact search k=10 {dtype}", t, f"{dtype} widening scan (before)", before),
            (f"{dtype} first query (+ row norms, once)", first, "numpy float32", peer),
        ):
            rows.append(
                {
                    "case": f"{n}x{dim}",
                    "what": what,
                    "urna_s": value,
                    "peer": ref,
                    "peer_s": ref_s,
                    "ratio": value / ref_s,
                    "same_hits": same,
                }
            )
        qpath.unlink()
    path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller matrices, for a smoke run")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    cases = [(100_000, 256), (20_000, 384)]
    if not args.quick:
        cases = [(400_000, 256), (1_000_000, 256), (100_000, 384)]
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="urna-bench-") as tmp:
        for n, dim in cases:
            run_case(Path(tmp), n, dim, rows)
    try:
        import threadpoolctl

        blas = [
            (i["internal_api"], i.get("architecture"), i["num_threads"])
            for i in threadpoolctl.threadpool_info()
        ]
    except ImportError:
        blas = "threadpoolctl not installed"
    print(f"numpy {np.__version__}, BLAS {blas}")
    print(f"{'case':<12} {'what':<44} {'urna':>10} {'peer':>10}  {'ratio':>6}  peer")
    for r in rows:
        if r.get("same_hits") is False:
            print(f"WARNING: {r['case']} urna and numpy disagree on the hits")
        peer_s = r["peer_s"]
        ratio = r["ratio"]
        print(
            f"{r['case']:<12} {r['what']:<44} {r['urna_s'] * 1000:>8.2f}ms "
            f"{(peer_s or 0) * 1000:>8.2f}ms  {ratio if ratio is None else f'{ratio:.2f}x':>6}  "
            f"{r['peer']}"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"numpy": np.__version__, "blas": blas, "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
