"""Text the CLI prints: the hit block, stats, inspect and cite, each built as one string."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from urna.format.chunks import Chunk
from urna.search.collection import Collection
from urna.search.fileshard import FileShard as Corpus
from urna.search.protocol import Searchable
from urna.search.result import SearchResult

KEY_WIDTH = 14


def rank_label(r: Mapping[str, float]) -> str:
    """A method's rank of a fused hit: ``10``, or ``>400`` for a score filled in for a
    candidate the method did not return among its 400 (complete scores)."""
    return str(int(r["rank"])) if "rank" in r else f">{int(r['beyond'])}"


def kv(key: str, value: Any) -> str:
    """``key:`` left-aligned in a 14-character field (wider for a longer key, so at least
    one space always follows the colon), then the value."""
    label = key + ":"
    return f"{label:<{max(KEY_WIDTH, len(label) + 1)}}{value}"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def hit_block(result: SearchResult) -> str:
    lines = [kv("space", result.space)] if result.space is not None else []
    lines += [
        kv("index_type", result.index_type),
        kv("recall", "1" if result.recall == 1.0 else result.recall_note or "(not computed)"),
        kv("truncated", _bool(result.truncated)),
        kv("k_requested", result.k_requested),
        kv("k_returned", result.k_returned),
        kv("query_time", f"{result.query_time_ms:.3f} ms"),
        *([kv("note", result.note)] if result.n_searched == 0 and result.note else []),
        "hits:",
    ]
    for h in result.hits:
        methods = ""
        if len(h.ranks) > 1 or (h.ranks and "vector" not in h.ranks):
            methods = " " + " ".join(
                f"{m}_score={r['score']:.6f} {m}_rank={rank_label(r)}" for m, r in h.ranks.items()
            )
        lines.append(
            f"  [{h.rank:>3}] chunk_id={h.chunk_id} score={h.score:.6f} "
            f"score_type={h.score_type} source_uri={h.source_uri} "
            f"offset={h.byte_start}-{h.byte_end} model={h.model} index_type={h.index_type} "
            f"reranked={_bool(h.reranked)} file_hash={h.file_hash} "
            f"content_hash={h.content_hash} citation_id={h.citation_id}{methods}"
            + (f" precision={h.precision}" if h.precision else "")
        )
    return "\n".join(lines)


def _manifest_lines(corpus: Corpus) -> list[str]:
    m = corpus.manifest
    lines = [
        kv("file", corpus.path),
        kv("format", f"{m['format_version']} (schema {m['schema_version']})"),
        kv("model", m["embedding_model"]),
        kv(
            "model_hash",
            m["model_hash"] + ("  (placeholder)" if corpus.has_placeholder_model_hash else ""),
        ),
        kv("dim", m["embedding_dim"]),
        kv("chunks", m["n_chunks"]),
        kv("dtype", m["dtype"]),
        kv("metric", m["metric"]),
        kv("score_type", m["score_type"]),
        kv("normalize", m["normalize"]),
        kv("index_type", m["index_type"]),
        kv("rerank", m["rerank_policy"]),
        kv("chunker", m["chunker_version"]),
    ]
    for key in ("title", "version", "created", "description", "license"):
        if key in m:
            lines.append(kv(key, m[key]))
    if "embed_context" in m:
        lines.append(kv("context", m["embed_context"]))
    if "embed_precision" in m:
        lines.append(kv("precision", m["embed_precision"]))
    if "embed_device" in m:
        lines.append(kv("device", m["embed_device"]))
    if "embed_batching" in m:
        lines.append(kv("batching", m["embed_batching"]))
    if corpus.bm25 is not None:
        bm25 = corpus.bm25
        lines.append(kv("tokenizer", bm25.tokenizer))
        around = f", neighbours at 1/{bm25.divisor}" if bm25.divisor else ", chunks alone"
        lines.append(kv("bm25", f"k1 = {bm25.k1:.3g}, b = {bm25.b:.3g}{around}"))
    if isinstance(m.get("fusion"), dict):
        f = m["fusion"]
        scale = " x query idf sum" if f.get("text_scale") == "query_idf" else " (fixed)"
        lines.append(kv("fusion", f"{f.get('default')}, C = {f.get('text_calibration')}{scale}"))
        fb = f.get("feedback")
        if isinstance(fb, dict):
            lines.append(
                kv(
                    "feedback",
                    f"{fb.get('method')}, {fb.get('docs')} fused chunks, weight {fb.get('weight')}",
                )
            )
        if f.get("scores") == "complete":
            lines.append(kv("fused scores", "complete (both methods score every candidate)"))
    caps = [k.removeprefix("supports_") for k, v in m["capabilities"].items() if v]
    lines.append(kv("capabilities", ", ".join(caps) or "none"))
    lines.append(kv("file_size", f"{corpus.size} bytes"))
    return lines


def _hash_lines(corpus: Corpus) -> list[str]:
    return [kv("file_hash", corpus.file_hash), kv("content_hash", corpus.content_hash)]


def stats(corpus: Corpus) -> str:
    lines = _manifest_lines(corpus)
    sections = corpus.sections()
    lines.append(kv("sections", len(sections)))
    for s in sections:
        lines.append(f"  0x{s.id:02X} {s.name} encoding={s.encoding} {s.size} bytes")
    lines += _space_lines(corpus)
    lines += field_lines(corpus.schema())
    lines += _hash_lines(corpus)
    return "\n".join(lines)


def field_lines(schema: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The metadata fields a where-filter can name, with their types and chunk counts."""
    out = [kv("fields", len(schema))]
    for name, kinds in schema.items():
        shown = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
        out.append(f"  {name}: {shown}")
    return out


def _space_lines(corpus: Corpus) -> list[str]:
    spaces = corpus.spaces()
    if not spaces:
        return [kv("spaces", "none")]
    return [kv("spaces", len(spaces))] + [
        f"  {s.name} model={s.model} dim={s.dim} model_hash={s.model_hash} "
        f"section=0x{s.section:02X}"
        for s in spaces
    ]


def inspect(corpus: Corpus) -> str:
    lines = _manifest_lines(corpus)
    sections = corpus.sections()
    lines.append(kv("sections", len(sections)))
    lines.append("  id    name                   encoding  offset      size        checksum")
    for s in sections:
        lines.append(
            f"  0x{s.id:02X}  {s.name:<22} {s.encoding:<9} {s.offset:<11} {s.size:<11} {s.checksum}"
        )
    lines += _space_lines(corpus)
    lines.append(kv("provenance", _compact(corpus.provenance)))
    lines += _hash_lines(corpus)
    lines += field_lines(corpus.schema())
    return "\n".join(lines)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def cite(corpus: Searchable, chunk: Chunk, extra: Iterable[tuple[str, Any]] = ()) -> str:
    lines = [
        kv("citation_id", chunk.citation_id),
        kv("file", corpus.path),
        kv("file_hash", corpus.file_hash),
        kv("content_hash", corpus.content_hash),
        kv("chunk_id", chunk.chunk_id),
        kv("source_uri", chunk.source_uri),
        kv("byte_start", chunk.byte_start),
        kv("byte_end", chunk.byte_end),
    ]
    lines += [kv(k, v) for k, v in extra]
    lines += ["text:", chunk.text]
    return "\n".join(lines)


def build_summary(summary: Any) -> str:
    files = f"{summary.files}" + (f" ({len(summary.skipped)} skipped)" if summary.skipped else "")
    lines = [
        kv("dry_run" if summary.dry_run else "wrote", summary.output),
        kv("files", files),
        kv("documents", summary.documents),
        kv("chunks", summary.chunks),
        kv("model", summary.model),
    ]
    if not summary.dry_run:
        lines += [
            kv("embedded", summary.embedded),
            kv("cached", summary.cached),
            kv("size", f"{summary.size} bytes"),
        ]
    lines.append(kv("time", f"{summary.seconds:.3f} s"))
    if not summary.dry_run:
        lines += [kv("file_hash", summary.file_hash), kv("content_hash", summary.content_hash)]
    return "\n".join(lines)


def ask(result: SearchResult, *, explain: bool) -> str:
    lines: list[str] = []
    if explain:
        routes = {
            "vector": "vector (exact cosine over every chunk)",
            "text": "text (BM25 over each chunk in its context)",
            "hybrid": "hybrid (exact cosine and BM25, fused)",
        }
        counts = " ".join(f"{m}={n}" for m, n in result.candidates.items())
        fusion = result.hits[0].score_type if result.hits else ""
        lines += [
            kv("route", routes.get(result.mode or "", result.mode)),
            kv("candidates", counts or "none"),
            *([kv("note", result.note)] if result.note else []),
            kv(
                "rerank_source",
                "none (exact scores)" if result.mode != "hybrid" else f"fusion={fusion}",
            ),
            "",
        ]
    if not result.hits:
        kept_none = result.n_searched == 0 and result.note
        lines.append(f"no hits: {result.note}." if kept_none else "no hits.")
    for h in result.hits:
        lines += [h.text, f"  -- {h.citation_id} ({h.source_uri})", ""]
    return "\n".join(lines).rstrip("\n") + ("\n" if result.hits else "")


def eval_report(report: Any) -> str:
    lines = [
        kv("collection", report.collection),
        kv(
            "corpus",
            f"{report.corpus_file} ({report.chunks} chunks, "
            f"{'built now' if report.built else 'reused'})",
        ),
        kv("model", report.model),
        kv("queries", report.queries_file),
        kv("default fusion", report.default_fusion),
        "",
        f"{'mode':<8} {'fusion':<11} {'nDCG@10':>8} {'R@100':>7} {'MRR@10':>7} {'queries':>8} "
        f"{'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}",
    ]
    for r in report.rows:
        lines.append(
            f"{r.mode:<8} {r.fusion:<11} {r.ndcg10:>8.4f} {r.recall100:>7.4f} {r.mrr10:>7.4f} "
            f"{r.queries:>8} {r.p50_ms:>8.2f} {r.p95_ms:>8.2f} {r.p99_ms:>8.2f}"
        )
    return "\n".join(lines)


def benchmark(report: Any) -> str:
    lines = [kv("file", report.file), kv("chunks", report.chunks), kv("k", report.k)]
    if report.ann_recall is not None:
        lines.append(kv("ann_recall", f"{report.ann_recall:.4f} (recall@{report.k} vs exact)"))
    if report.hybrid_ann_recall is not None:
        recall = f"{report.hybrid_ann_recall:.4f} (recall@{report.k} vs exact hybrid)"
        lines.append(kv("hybrid_ann_recall", recall))
    lines += [
        "",
        f"{'path':<12} {'queries':>8} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'mean ms':>9}",
    ]
    for p in report.paths:
        lines.append(
            f"{p.path:<12} {p.queries:>8} {p.p50_ms:>9.3f} {p.p95_ms:>9.3f} "
            f"{p.p99_ms:>9.3f} {p.mean_ms:>9.3f}"
        )
    return "\n".join(lines)


def collection_lines(collection: Collection) -> list[str]:
    c = collection.catalog
    lines = [
        kv("collection", collection.path),
        kv("version", collection.version),
        kv("model", c.model),
        kv("model_hash", c.model_hash),
        kv("dim", c.dim),
        kv("chunks", c.n_chunks),
        kv("chunker", c.chunker_version),
        kv("tokenizer", c.tokenizer_version or "none (no BM25)"),
        kv("partition", f"sha256(source_uri) into {c.n_buckets} buckets"),
        kv("shards", len(c.shards)),
    ]
    for e in c.shards:
        where = f"buckets {e.buckets[0]}-{e.buckets[1]}"
        if e.file is None:
            lines.append(f"  [{e.index}] (empty) {where}")
        else:
            gone = f" ({e.n_chunks - e.live} deleted)" if e.deleted else ""
            lines.append(
                f"  [{e.index}] {e.file} {e.n_chunks} chunks{gone} {e.sources} sources {where} "
                f"content_hash={e.content_hash}"
            )
    if c.format_version >= 2:
        lines.append(kv("segments", len(c.segments)))
        for e in c.segments:
            gone = f" ({e.n_chunks - e.live} deleted)" if e.deleted else ""
            lines.append(
                f"  [{e.index}] {e.file} {e.n_chunks} chunks{gone} {e.sources} sources "
                f"content_hash={e.content_hash}"
            )
        lines.append(kv("created", c.created))
        lines.append(kv("parent", c.parent or "none (the first version)"))
    if c.superseded:
        lines.append(kv("superseded", len(c.superseded)))
    if c.tokenizer_version:
        table = collection.text_table
        lines.append(kv("text table", table or "none (a word is weighed when first asked)"))
    lines += field_lines(collection.fields())
    return lines


def collection_stats(collection: Collection) -> str:
    return "\n".join(collection_lines(collection))


def collection_inspect(collection: Collection) -> str:
    lines = collection_lines(collection)
    for shard in collection.shards:
        if isinstance(shard, Corpus):
            lines += ["", inspect(shard)]
    return "\n".join(lines)


def collection_summary(summary: Any) -> str:
    lines = [
        kv("wrote", summary.output),
        kv("files", summary.files),
        kv("documents", summary.documents),
        kv("chunks", summary.chunks),
        kv("model", summary.model),
        kv("shards", f"{summary.shards} ({len(summary.rebuilt)} built, {len(summary.kept)} kept)"),
    ]
    if summary.updated:
        lines[1:3] = [kv("files", f"{summary.files} read (changed)")]
        lines[-1] = kv("shards", f"{summary.shards} (updated by what changed)")
    if summary.changes is not None:
        c = summary.changes
        lines.append(
            kv("changes", f"{c['added']} added, {c['changed']} changed, {c['removed']} removed")
        )
        lines.append(kv("segments", summary.segments))
    for r in summary.rebuilt:
        lines.append(
            f"  built [{r.index}] {r.file}: {r.n_chunks} chunks, {r.embedded} embedded, "
            f"{r.reused} reused, {r.seconds:.1f} s"
        )
    lines += [
        kv("embedded", summary.embedded),
        kv("reused", summary.cached),
        kv("size", f"{summary.size} bytes"),
        kv("time", f"{summary.seconds:.3f} s"),
        kv("version", summary.version),
    ]
    return "\n".join(lines)
