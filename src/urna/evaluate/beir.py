"""A BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels.tsv; built into .urna and scored."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from urna.errors import BuildError
from urna.evaluate.metrics import mean, mrr_at, ndcg_at, recall_at
from urna.search.protocol import Searchable as Corpus


@dataclass(frozen=True)
class Collection:
    folder: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_collection(folder: Path, *, split: str = "test") -> Collection:
    """Queries that have judgements in ``qrels.tsv`` (``qrels_<split>.tsv`` for other splits)."""
    qrels_path = folder / ("qrels.tsv" if split == "test" else f"qrels_{split}.tsv")
    queries_path = folder / ("queries.jsonl" if split == "test" else f"queries_{split}.jsonl")
    for path in (folder / "corpus.jsonl", queries_path, qrels_path):
        if not path.is_file():
            raise BuildError(f"not a BEIR folder: {path} is missing")
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader, None)
        if header is None or header[:2] != ["query-id", "corpus-id"]:
            raise BuildError(f"{qrels_path}: expected a query-id, corpus-id, score header")
        for row in reader:
            if len(row) >= 3:
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries = {}
    with open(queries_path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                obj = json.loads(line)
                if str(obj["_id"]) in qrels:
                    queries[str(obj["_id"])] = obj["text"]
    return Collection(folder, queries, qrels)


def doc_id(source_uri: str) -> str:
    return source_uri.partition("#")[2]


@dataclass(frozen=True)
class Scores:
    ndcg10: float
    recall100: float
    mrr10: float
    queries: int
    latency_ms: list[float]


def evaluate(
    corpus: Corpus,
    collection: Collection,
    search: Callable[[Corpus, str, int], list[tuple[str, float]]],
    *,
    depth: int = 100,
) -> Scores:
    """Rank documents per query (a document scores as its best chunk) and average the metrics."""
    ndcg, recall, mrr, latency = [], [], [], []
    for qid, text in collection.queries.items():
        t0 = time.perf_counter()
        hits = search(corpus, text, depth * 2)
        latency.append((time.perf_counter() - t0) * 1000)
        ranking: list[str] = []
        seen: set[str] = set()
        for source_uri, _ in hits:
            d = doc_id(source_uri)
            if d not in seen:
                seen.add(d)
                ranking.append(d)
        judged = collection.qrels[qid]
        ndcg.append(ndcg_at(ranking, judged, 10))
        recall.append(recall_at(ranking, judged, depth))
        mrr.append(mrr_at(ranking, judged, 10))
    return Scores(mean(ndcg), mean(recall), mean(mrr), len(ndcg), latency)


def vector_search(corpus: Corpus, text: str, k: int) -> list[tuple[str, float]]:
    return mode_search("vector")(corpus, text, k)


def mode_search(
    mode: str, fusion: str | None = None
) -> Callable[[Corpus, str, int], list[tuple[str, float]]]:
    def search(corpus: Corpus, text: str, k: int) -> list[tuple[str, float]]:
        result = corpus.search_text(text, k=min(k, corpus.n_chunks), mode=mode, fusion=fusion)
        return [(h.source_uri, h.score) for h in result.hits]

    return search
