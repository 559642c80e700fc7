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
from urna.search.request import Query


@dataclass(frozen=True)
class Collection:
    folder: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_collection(
    folder: Path,
    *,
    split: str = "test",
    queries: Path | None = None,
    qrels: Path | None = None,
) -> Collection:
    """Queries that have judgements: the split's (``queries.jsonl`` and ``qrels.tsv`` for
    test, ``queries_<split>.jsonl`` and ``qrels_<split>.tsv`` otherwise), or another query
    file (and judgement file) over the same corpus."""
    qrels_path = qrels or folder / ("qrels.tsv" if split == "test" else f"qrels_{split}.tsv")
    queries_path = queries or folder / (
        "queries.jsonl" if split == "test" else f"queries_{split}.jsonl"
    )
    for path, given in (
        (folder / "corpus.jsonl", False),
        (queries_path, bool(queries)),
        (qrels_path, bool(qrels)),
    ):
        if not path.is_file():
            raise BuildError(
                f"file not found: {path}" if given else f"not a BEIR folder: {path} is missing"
            )
    judged = read_qrels(qrels_path)
    asked = read_queries(queries_path)
    return Collection(folder, {q: t for q, t in asked.items() if q in judged}, judged)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A TREC/BEIR judgement file: a ``query-id, corpus-id, score`` header, then tab-separated
    rows with an integer score."""
    qrels: dict[str, dict[str, int]] = {}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle, delimiter="\t")
            header = next(reader, None)
            if header is None or header[:2] != ["query-id", "corpus-id"]:
                raise BuildError(f"{path}: expected a query-id, corpus-id, score header")
            for line, row in enumerate(reader, 2):
                if not row:
                    continue
                if len(row) < 3:
                    raise BuildError(f"{path}:{line}: expected 3 tab-separated fields")
                try:
                    score = int(row[2])
                except ValueError:
                    raise BuildError(f"{path}:{line}: score {row[2]!r} is not an integer") from None
                qrels.setdefault(row[0], {})[row[1]] = score
    except UnicodeDecodeError as exc:
        raise BuildError(f"{path}: not UTF-8 ({exc.reason})") from None
    return qrels


def read_queries(path: Path) -> dict[str, str]:
    """A BEIR query file: one JSON object per line with ``_id`` and ``text``."""
    queries: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except (json.JSONDecodeError, RecursionError):
                    raise BuildError(f"{path}:{line}: not a JSON object") from None
                if (
                    not isinstance(obj, dict)
                    or not isinstance(obj.get("_id"), str | int)
                    or not isinstance(obj.get("text"), str)
                ):
                    raise BuildError(f"{path}:{line}: expected an object with _id and text")
                queries[str(obj["_id"])] = obj["text"]
    except UnicodeDecodeError as exc:
        raise BuildError(f"{path}: not UTF-8 ({exc.reason})") from None
    return queries


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
        result = corpus.run(Query(text=text, k=min(k, corpus.n_chunks), mode=mode, fusion=fusion))
        return [(h.source_uri, h.score) for h in result.hits]

    return search
