"""``urna eval``: build (or reuse) a BEIR collection's corpus file and score every mode."""

from __future__ import annotations

import os
import re
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from urna.build.spec import BuildSpec, Source
from urna.build.summary import Report
from urna.build.writer import build_file, build_folder
from urna.embed.base import cache_dir
from urna.embed.precision import PRECISION_VARIABLE
from urna.embed.registry import canonical, resolve
from urna.errors import BuildError
from urna.evaluate.beir import evaluate, load_collection, mode_search
from urna.evaluate.metrics import percentile
from urna.format.fusion import FUSIONS
from urna.search.opening import open_path

# (mode, fusion): every method alone, then hybrid under each fusion ("-": no fusion).
RUNS = (("text", "-"), ("vector", "-"), *(("hybrid", f) for f in FUSIONS))


@dataclass
class EvalRow:
    mode: str
    fusion: str
    ndcg10: float
    recall100: float
    mrr10: float
    queries: int
    p50_ms: float
    p95_ms: float
    p99_ms: float


@dataclass
class EvalReport:
    collection: str
    corpus_file: str
    model: str
    chunks: int
    built: bool
    default_fusion: str
    queries_file: str
    rows: list[EvalRow] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def default_output(folder: Path, model: str, shards: int | None = None) -> Path:
    slug = re.sub(r"[^A-Za-z0-9.-]+", "-", canonical(model)).strip("-")
    name = f"{folder.resolve().name}-{slug}"
    asked = os.environ.get(PRECISION_VARIABLE, "auto").strip().lower()
    if asked not in ("", "auto"):  # --precision: its own file, never the default's
        name += f"-{asked}"
    return cache_dir() / "eval" / (f"{name}-{shards}shards" if shards else f"{name}.urna")


def run_eval(
    folder: Path,
    *,
    model: str,
    output: Path | None = None,
    rebuild: bool = False,
    split: str = "test",
    runs: tuple[tuple[str, str], ...] = RUNS,
    report: Report = lambda _: None,
    shards: int | None = None,
    queries: Path | None = None,
    qrels: Path | None = None,
) -> EvalReport:
    """Build (or reuse) the collection's corpus as one file, or as a collection of ``shards``
    shards, then score every mode on the split's judged queries (or on ``queries``, judged
    by ``qrels`` or the split's judgements)."""
    collection = load_collection(folder, split=split, queries=queries, qrels=qrels)
    if not collection.queries:
        asked = queries or f"the {split} split"
        raise BuildError(f"{folder}: no judged queries in {asked}")
    out = output or default_output(folder, model, shards)
    out.parent.mkdir(parents=True, exist_ok=True)
    built = False
    if rebuild or not out.exists():
        report(f"build: {folder / 'corpus.jsonl'} -> {out}")
        embedder = resolve(model)
        spec = BuildSpec(
            sources=(Source(folder / "corpus.jsonl"),), output=out, base=folder, model=embedder.name
        )
        if shards:
            build_folder(spec, shards=shards, report=report, rebuild=rebuild)
        else:
            build_file(spec, report=report, embedder=embedder)
        built = True
    with open_path(out) as corpus:
        result = EvalReport(
            folder.name,
            str(out),
            corpus.model,
            corpus.n_chunks,
            built,
            corpus.fusion.default,
            str(queries or folder / f"queries{'' if split == 'test' else '_' + split}.jsonl"),
        )
        for mode, fusion in runs:
            if mode in ("text", "hybrid") and not corpus.has_text_index:
                continue
            report(f"eval: {mode} {fusion} over {len(collection.queries)} queries")
            search = mode_search(mode, None if fusion == "-" else fusion)
            scores = evaluate(corpus, collection, search, depth=100)
            lat = scores.latency_ms
            result.rows.append(
                EvalRow(
                    mode,
                    fusion,
                    scores.ndcg10,
                    scores.recall100,
                    scores.mrr10,
                    scores.queries,
                    statistics.median(lat),
                    percentile(lat, 0.95),
                    percentile(lat, 0.99),
                )
            )
    return result
