"""urna against LanceDB and Chroma: the same chunks and vectors, the same queries, one run,
the systems' queries interleaved, ratios against urna.

    pip install -e '.[bench]'   # lancedb and chromadb: benchmark dependencies only
    python benchmarks/bench_peers.py [--n 200000] [--queries 100] [--parts scifact,rows,e2e]
        [--json benchmarks/results/peers.json]

Two sizes:

* **SciFact** (5,183 abstracts, the chunks and MiniLM vectors of ``urna eval``'s file): its
  test queries embedded once by the same model, so nDCG@10 is measured for every method a
  system has (documents ranked by their best chunk, 40 chunks asked, untimed).
* **``--n`` rows** (default 200,000): unit vectors of 384 dimensions, clustered as
  embeddings are, each with a sentence of SciFact (``bench_syntax.py``), and SciFact's test
  queries as text, each with a vector near a stored row (a cosine of about 0.93 to it).

Per system and size: **ingest** (chunks and vectors in, every index the system searches
with: urna BM25 and HNSW, LanceDB IVF_PQ and its full-text index, Chroma HNSW), **disk**
(bytes of what ingest wrote), **cold start** (a fresh process: import, open, one text query,
or a vector query where a system has no text search; the files are in the page cache),
**memory** (the peak RSS of that process after it also answers 50 queries), and p50 latency
with k = 10 for **exact** vector search, **ANN** (recall@10 against the exact top 10),
**BM25** and **hybrid** (urna's exact hybrid with the caller's vector; LanceDB's ANN and
full-text search fused by RRF). Chroma has no exact and no ranked text search offline.
**End to end from text**: whole processes from 200 SciFact records to an index that
answers, model load included (urna's build with its default precision, int8 on a CPU with
VNNI, its model export cached as after a machine's first build, and ``--precision
bfloat16``; the peers embed with sentence-transformers, float32, the same model, then
ingest).

Printed as tables; ``--json`` writes every figure, with the peers' versions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
ZERO = "sha256:" + "0" * 64
K = 10
DEEP = 40  # chunks asked for nDCG@10 over documents
BATCH = 4096
MEMORY_QUERIES = 50


def scifact() -> dict[str, Any]:
    """The chunks, vectors and judged test queries of urna's SciFact eval file."""
    import urna
    from urna.evaluate.beir import doc_id, load_collection
    from urna.evaluate.run import default_output, run_eval

    folder = DATA / "scifact"
    run_eval(folder, model="minilm", runs=())  # builds the eval file once, then reuses it
    collection = load_collection(folder, split="test")
    with urna.open(default_output(folder, "minilm")) as corpus:
        n = corpus.n_chunks
        chunks = [corpus.chunk(i) for i in range(n)]
        vectors = np.asarray(corpus.embeddings(np.arange(n)), dtype=np.float32)
        context = corpus.manifest.get("embed_context")
        queries = list(collection.queries.items())
        asked = corpus.embedder().embed([text for _, text in queries])
    return {
        "chunks": [
            {
                "text": c.text,
                "source_uri": c.source_uri,
                "byte_start": c.byte_start,
                "byte_end": c.byte_end,
                "section_path": c.section_path,
                "source_ordinal": c.source_ordinal,
            }
            for c in chunks
        ],
        "vectors": vectors,
        "docs": [doc_id(c.source_uri) for c in chunks],
        "context": context,
        "texts": [text for _, text in queries],
        "qvectors": np.asarray(asked, dtype=np.float32),
        "judged": [collection.qrels[qid] for qid, _ in queries],
    }


def synthetic(n: int, queries: int) -> dict[str, Any]:
    from bench_peers_hybrid import DIM, NOISE, rows

    texts, vectors = rows(n)
    rng = np.random.default_rng(1)
    lines = (DATA / "scifact" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    asked = [json.loads(x)["text"] for x in lines][:queries]
    near = (
        vectors[rng.integers(0, len(texts), len(asked))]
        + rng.standard_normal((len(asked), DIM)).astype(np.float32) * NOISE
    )
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    chunks = [
        {"text": t, "source_uri": f"s{i:07d}.txt", "byte_start": 0, "byte_end": len(t.encode())}
        for i, t in enumerate(texts)
    ]
    return {"chunks": chunks, "vectors": vectors, "docs": None, "context": None,
            "texts": asked, "qvectors": near, "judged": None}  # fmt: skip


# --- the systems: ingest, then each method as ids of rows --------------------------------


class Urna:
    name = "urna"

    def ingest(self, folder: Path, data: dict[str, Any]) -> None:
        import urna

        self.path = folder / "peers.urna"
        urna.build(self.path, data["chunks"], embeddings=data["vectors"], model="bench",
                   model_hash=ZERO, chunker_version="bench/1", bm25=True, hnsw=True,
                   embed_context=data["context"])  # fmt: skip
        self.corpus = urna.open(self.path)

    def files(self) -> Path:
        return self.path

    def _ids(self, query: Any) -> list[int]:
        return [h.ordinal for h in self.corpus.run(query).hits]

    def exact(self, text: str, q: np.ndarray) -> list[int]:
        import urna

        return self._ids(urna.Query(vector=q, method="exact", k=K))

    def ann(self, text: str, q: np.ndarray) -> list[int]:
        import urna

        return self._ids(urna.Query(vector=q, method="ann", k=K))

    def bm25(self, text: str, q: np.ndarray) -> list[int]:
        import urna

        return self._ids(urna.Query(text=text, mode="text", k=K))

    def hybrid(self, text: str, q: np.ndarray) -> list[int]:
        import urna

        return self._ids(urna.Query(text=text, vector=q, mode="hybrid", k=K))

    def cold(self) -> str:
        return f"""
import urna
c = urna.open({str(self.path)!r})
def text(t, q): return c.run(urna.Query(text=t, mode="text", k={K}))
def vector(t, q): return c.run(urna.Query(vector=q, method="ann", k={K}))
"""


class Lance:
    name = "lancedb"

    def ingest(self, folder: Path, data: dict[str, Any]) -> None:
        import lancedb
        import pyarrow as pa
        from lancedb.index import FTS, IvfPq

        self.path = folder / "lance"
        db = lancedb.connect(str(self.path))
        vectors = data["vectors"]
        n, dim = vectors.shape
        self.table = db.create_table(
            "peers",
            pa.table({
                "id": pa.array(range(n), pa.int64()),
                "text": pa.array([c["text"] for c in data["chunks"]]),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
            }),
        )  # fmt: skip
        ivf = IvfPq(distance_type="cosine", num_partitions=max(1, int(n**0.5)),
                    num_sub_vectors=dim // 8)  # fmt: skip
        self.table.create_index("vector", config=ivf)
        self.table.create_index("text", config=FTS())

    def files(self) -> Path:
        return self.path

    @staticmethod
    def _ids(rows: list[dict[str, Any]]) -> list[int]:
        return [int(r["id"]) for r in rows]

    def exact(self, text: str, q: np.ndarray) -> list[int]:
        search = self.table.search(q, vector_column_name="vector").bypass_vector_index()
        return self._ids(search.limit(K).to_list())

    def ann(self, text: str, q: np.ndarray) -> list[int]:
        search = self.table.search(q, vector_column_name="vector")
        return self._ids(search.limit(K).to_list())

    def bm25(self, text: str, q: np.ndarray) -> list[int]:
        search = self.table.search(text, query_type="fts")
        return self._ids(search.limit(K).to_list())

    def hybrid(self, text: str, q: np.ndarray) -> list[int]:
        search = self.table.search(query_type="hybrid", vector_column_name="vector")
        return self._ids(search.vector(q).text(text).limit(K).to_list())

    def cold(self) -> str:
        return f"""
import lancedb
t = lancedb.connect({str(self.path)!r}).open_table("peers")
def text(s, q): return t.search(s, query_type="fts").limit({K}).to_list()
def vector(s, q): return t.search(q, vector_column_name="vector").limit({K}).to_list()
"""


class Chroma:
    name = "chroma"
    exact = bm25 = hybrid = None  # neither exact search nor ranked text search offline

    def ingest(self, folder: Path, data: dict[str, Any]) -> None:
        import chromadb

        self.path = folder / "chroma"
        client = chromadb.PersistentClient(path=str(self.path))
        self.col = client.create_collection(
            "peers", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        vectors, texts = data["vectors"], [c["text"] for c in data["chunks"]]
        step = min(BATCH, client.get_max_batch_size())
        for at in range(0, len(texts), step):
            end = min(at + step, len(texts))
            ids = [str(i) for i in range(at, end)]
            self.col.add(ids=ids, embeddings=vectors[at:end], documents=texts[at:end])

    def files(self) -> Path:
        return self.path

    def ann(self, text: str, q: np.ndarray) -> list[int]:
        found = self.col.query(query_embeddings=[q], n_results=K, include=[])
        return [int(i) for i in found["ids"][0]]

    def cold(self) -> str:
        return f"""
import chromadb
col = chromadb.PersistentClient(path={str(self.path)!r}).get_collection("peers")
text = None
def vector(s, q): return col.query(query_embeddings=[q], n_results={K}, include=[])
"""


COLD = """
import sys, time
import numpy as np
t0 = time.perf_counter()
{body}
qs = np.load(sys.argv[1])
texts = sys.argv[2:]
first = (text or vector)
first(texts[0], qs[0])
took = time.perf_counter() - t0
for i in range({memory}):
    for ask in (text, vector):
        if ask is not None:
            ask(texts[i % len(texts)], qs[i % len(qs)])
# VmHWM: this process's own peak (ru_maxrss would carry the parent's across exec)
hwm = [x for x in open("/proc/self/status") if x.startswith("VmHWM:")][0].split()[1]
print(took, hwm)
"""


def cold_and_memory(system: Any, data: dict[str, Any], work: Path) -> tuple[float, float]:
    """Wall seconds of a fresh process to its first answer, and its peak RSS in MiB."""
    qs = work / "queries.npy"
    np.save(qs, data["qvectors"][:MEMORY_QUERIES])
    script = COLD.format(body=system.cold(), memory=MEMORY_QUERIES)
    done = subprocess.run([sys.executable, "-c", script, str(qs), *data["texts"][:MEMORY_QUERIES]],
                          check=True, capture_output=True, text=True)  # fmt: skip
    took, rss_kb = done.stdout.split()
    return float(took) + _startup(), int(rss_kb) / 1024


_STARTUP: list[float] = []


def _startup() -> float:
    """An empty interpreter's start (added to the in-process time to first answer)."""
    if not _STARTUP:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        _STARTUP.append(time.perf_counter() - t0)
    return _STARTUP[0]


def disk(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def ndcg(ids: list[int], docs: list[str], judged: dict[str, int]) -> float:
    from urna.evaluate.metrics import ndcg_at

    return ndcg_at(list(dict.fromkeys(docs[i] for i in ids))[:10], judged)


def exact_truth(vectors: np.ndarray, qs: np.ndarray) -> list[list[int]]:
    scores = qs @ vectors.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :K]
    return [row.tolist() for row in top]


def measure(label: str, data: dict[str, Any], queries: int) -> dict[str, Any]:
    systems = [Urna(), Lance(), Chroma()]
    texts, qs = data["texts"][:queries], data["qvectors"][:queries]
    truth = exact_truth(data["vectors"], qs)
    out: dict[str, Any] = {"rows": len(data["chunks"]), "queries": len(texts)}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for system in systems:
            folder = work / system.name
            folder.mkdir()
            t0 = time.perf_counter()
            system.ingest(folder, data)
            out.setdefault(system.name, {})["ingest_s"] = round(time.perf_counter() - t0, 2)
            out[system.name]["disk_mb"] = round(disk(system.files()) / 2**20, 1)
        for system in systems:
            cold, rss = cold_and_memory(system, data, work)
            out[system.name]["cold_start_s"] = round(cold, 3)
            out[system.name]["peak_rss_mb"] = round(rss, 1)
        methods = ("exact", "ann", "bm25", "hybrid")
        times: dict[tuple[str, str], list[float]] = {}
        answers: dict[tuple[str, str], list[list[int]]] = {}
        for i in range(-3, len(texts)):  # three warm-up rounds, then interleaved
            j = max(i, 0)
            for method in methods:
                for system in systems:
                    ask: Callable[[str, np.ndarray], list[int]] | None = getattr(system, method)
                    if ask is None:
                        continue
                    t0 = time.perf_counter()
                    got = ask(texts[j], qs[j])
                    took = time.perf_counter() - t0
                    if i >= 0:
                        times.setdefault((system.name, method), []).append(took)
                        answers.setdefault((system.name, method), []).append(got)
        for (name, method), took in times.items():
            row = out[name]
            row[f"{method}_p50_ms"] = round(statistics.median(took) * 1000, 3)
            got = answers[(name, method)]
            if method in ("exact", "ann"):
                hit = sum(len(set(a) & set(t)) for a, t in zip(got, truth, strict=True))
                row[f"{method}_recall@10"] = round(hit / (K * len(got)), 4)
        if data["judged"] is not None:
            quality(systems, methods, data, texts, qs, out)
        if hasattr(systems[0], "corpus"):
            systems[0].corpus.close()
    print_table(label, out)
    return out


def quality(
    systems: list[Any], methods: tuple[str, ...], data: dict[str, Any], texts: list[str],
    qs: np.ndarray, out: dict[str, Any],
) -> None:  # fmt: skip
    """nDCG@10 of each method, untimed: ``DEEP`` chunks asked, their first ten documents
    ranked (a system that returns a document's chunks side by side is not cut short)."""
    global K
    k, K = K, DEEP
    try:
        for system in systems:
            for method in methods:
                ask = getattr(system, method)
                if ask is None:
                    continue
                scores = [
                    ndcg(ask(t, q), data["docs"], judged)
                    for t, q, judged in zip(texts, qs, data["judged"], strict=False)
                ]
                out[system.name][f"{method}_ndcg@10"] = round(sum(scores) / len(scores), 4)
    finally:
        K = k


def print_table(label: str, out: dict[str, Any]) -> None:
    names = ("urna", "lancedb", "chroma")
    keys = sorted({k for n in names for k in out[n]}, key=_order)
    print(f"\n{label}: {out['rows']} rows, {out['queries']} queries, k = {K}, interleaved")
    print("| | " + " | ".join(names) + " |\n|---|" + "---:|" * len(names))
    for key in keys:
        cells = []
        for n in names:
            value = out[n].get(key)
            base = out["urna"].get(key)
            if value is None:
                cells.append("")
            elif key.endswith(("_s", "_ms", "_mb")) and base and n != "urna":
                cells.append(f"{value} ({value / base:.2f}x)")
            else:
                cells.append(str(value))
        print(f"| {key} | " + " | ".join(cells) + " |")


def _order(key: str) -> tuple[int, str]:
    first = ("ingest_s", "disk_mb", "cold_start_s", "peak_rss_mb")
    return (first.index(key), "") if key in first else (len(first), key)


PEER_E2E = """
import json, sys, time
import numpy as np
from sentence_transformers import SentenceTransformer
texts = json.load(open(sys.argv[1]))
vectors = SentenceTransformer(sys.argv[2], device="cpu").encode(
    texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
{ingest}
"""
INGEST = {
    "chroma": """
import chromadb
col = chromadb.PersistentClient(path=sys.argv[3]).create_collection(
    "e2e", metadata={"hnsw:space": "cosine"}, embedding_function=None)
col.add(ids=[str(i) for i in range(len(texts))], embeddings=vectors, documents=texts)
""",
    "lancedb": """
import lancedb, pyarrow as pa
from lancedb.index import FTS
t = lancedb.connect(sys.argv[3]).create_table("e2e", pa.table({
    "id": pa.array(range(len(texts)), pa.int64()), "text": pa.array(texts),
    "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1])}))
t.create_index("text", config=FTS())
""",
}


def end_to_end(records: int) -> dict[str, float]:
    from urna.embed.hub import bundled_minilm

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        lines = (DATA / "scifact" / "corpus.jsonl").read_text().splitlines()[:records]
        (work / "records.jsonl").write_text("\n".join(lines) + "\n")
        texts = [(json.loads(x).get("title", "") + "\n" + json.loads(x)["text"]).strip()
                 for x in lines]  # fmt: skip
        (work / "texts.json").write_text(json.dumps(texts))
        env = {**os.environ, "URNA_CACHE_DIR": str(work / "cache")}
        urna_cli = [sys.executable, "-m", "urna", "build", str(work / "records.jsonl")]
        runs: dict[str, list[str]] = {
            "urna": [*urna_cli, "-o", str(work / "a.urna")],
            "urna --precision bfloat16": [
                *urna_cli,
                "-o",
                str(work / "b.urna"),
                "--precision",
                "bfloat16",
            ],
        }
        for name, ingest in INGEST.items():
            script = PEER_E2E.format(ingest=ingest)
            runs[name] = [sys.executable, "-c", script, str(work / "texts.json"),
                          str(bundled_minilm()), str(work / name)]  # fmt: skip
        warm = [*urna_cli, "-o", str(work / "warm.urna")]
        subprocess.run(warm, check=True, env=env, capture_output=True)  # int8's model export
        for name, cmd in runs.items():
            for stale in (work / "cache").glob("embeddings.sqlite*"):  # no vector is reused
                stale.unlink()
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, env=env, capture_output=True)
            out[name] = round(time.perf_counter() - t0, 2)
    print(f"\nend to end from {records} SciFact records (whole processes, model load included)")
    print("| system | seconds | x urna |\n|---|---:|---:|")
    for name, took in out.items():
        print(f"| {name} | {took} | {took / out['urna']:.2f} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--parts", default="scifact,rows,e2e")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import chromadb
    import lancedb

    import urna

    result: dict[str, Any] = {
        "versions": {
            "urna": urna.__version__,
            "lancedb": lancedb.__version__,
            "chromadb": chromadb.__version__,
        },
        "cpu": os.cpu_count(),
    }
    parts = args.parts.split(",")
    if "scifact" in parts:
        result["scifact"] = measure("SciFact", scifact(), args.queries * 10)
    if "rows" in parts:
        data = synthetic(args.n, args.queries)
        result[f"synthetic_{args.n}"] = measure(f"{args.n} rows", data, args.queries)
    if "e2e" in parts:
        result["end_to_end_s"] = end_to_end(args.records)
    if args.json is not None:  # parts not run keep their earlier figures
        args.json.parent.mkdir(parents=True, exist_ok=True)
        old = json.loads(args.json.read_text()) if args.json.exists() else {}
        args.json.write_text(json.dumps({**old, **result}, indent=1) + "\n")


if __name__ == "__main__":
    main()
