"""Our trec_eval-style metrics against pytrec_eval, and urna eval on a small BEIR folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import assert_error, needs_models, run
from urna.evaluate.metrics import mrr_at, ndcg_at, recall_at


def test_metrics_match_pytrec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {"q1": {"d1": 3, "d2": 1, "d5": 2}, "q2": {"d9": 1}, "q3": {"d1": 1, "d2": 1}}
    runs = {"q1": ["d3", "d1", "d5", "d4", "d2"], "q2": ["d1", "d2"], "q3": ["d2", "d7", "d1"]}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "recip_rank"})
    scored = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in runs.items()}
    reference = evaluator.evaluate(scored)
    for q, ranking in runs.items():
        assert ndcg_at(ranking, qrels[q], 10) == pytest.approx(reference[q]["ndcg_cut_10"])
        assert recall_at(ranking, qrels[q], 100) == pytest.approx(reference[q]["recall_100"])
        assert mrr_at(ranking, qrels[q], 10) == pytest.approx(reference[q]["recip_rank"])


@needs_models
def test_eval_command_on_a_small_collection(tmp_path: Path) -> None:
    folder = tmp_path / "mini"
    folder.mkdir()
    docs = {
        "a": ("Aspirin", "Aspirin lowers the risk of heart attack by thinning the blood."),
        "b": ("Vitamin C", "Vitamin C does not prevent the common cold in most people."),
        "c": ("Statins", "Statins reduce LDL cholesterol and cardiovascular events."),
        "d": ("Sleep", "Adults need seven to nine hours of sleep each night."),
    }
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n" for k, (t, x) in docs.items())
    )
    queries = {
        "1": "does aspirin protect the heart",
        "2": "cholesterol lowering drugs",
        "3": "how many hours should adults sleep",
    }
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items())
    )
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n1\ta\t1\n2\tc\t1\n3\td\t1\n")
    out = tmp_path / "mini.urna"
    result = run("eval", str(folder), "-o", str(out), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["built"] is True and report["chunks"] == 4
    assert report["default_fusion"] == "calibrated"
    rows = {(r["mode"], r["fusion"]): r for r in report["rows"]}
    assert set(rows) == {
        ("text", "-"),
        ("vector", "-"),
        ("hybrid", "calibrated"),
        ("hybrid", "rrf"),
    }
    assert rows[("vector", "-")]["ndcg10"] == pytest.approx(1.0)
    assert rows[("hybrid", "calibrated")]["mrr10"] == pytest.approx(1.0)
    again = json.loads(run("eval", str(folder), "-o", str(out), "--json").stdout)
    assert again["built"] is False
    table = run("eval", str(folder), "-o", str(out))
    assert "nDCG@10" in table.stdout and "hybrid   calibrated" in table.stdout
    # The same corpus as a collection scores the same.
    sharded = tmp_path / "mini-col"
    shards = run("eval", str(folder), "-o", str(sharded), "--shards", "2", "--json")
    assert shards.exit_code == 0, shards.stderr
    assert (sharded / "catalog.json").is_file()
    for row in json.loads(shards.stdout)["rows"]:
        assert row["ndcg10"] == pytest.approx(rows[(row["mode"], row["fusion"])]["ndcg10"])
    # Another query set over the same corpus, judged by its own qrels (unjudged queries skipped).
    other = tmp_path / "other.jsonl"
    other.write_text(
        json.dumps({"_id": "q1", "text": "vitamin c and colds"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "unjudged"})
        + "\n"
    )
    judged = tmp_path / "other.tsv"
    judged.write_text("query-id\tcorpus-id\tscore\nq1\tb\t1\n")
    pair = ("--queries", str(other), "--qrels", str(judged))
    asked = run("eval", str(folder), "-o", str(out), *pair)
    assert asked.exit_code == 0, asked.stderr
    assert "other.jsonl" in asked.stdout
    scored = json.loads(
        run(
            "eval", str(folder), "-o", str(out), "--queries", str(other), "--qrels", str(judged),
            "--json",
        ).stdout
    )  # fmt: skip
    assert scored["queries_file"] == str(other)
    assert {r["queries"] for r in scored["rows"]} == {1}
    # Bad input: one precise error each.
    bad = tmp_path / "bad"
    bad.mkdir()
    assert "not a BEIR folder" in run("eval", str(bad)).stderr
    missing = run("eval", str(folder), "-o", str(out), "--queries", str(tmp_path / "none.jsonl"))
    assert_error(missing, "file not found")
    unjudged = run("eval", str(folder), "-o", str(out), "--queries", str(other))
    assert_error(unjudged, "no judged queries")
    (tmp_path / "broken.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tb\tabc\n")
    assert_error(
        run("eval", str(folder), "-o", str(out), "--queries", str(other),
            "--qrels", str(tmp_path / "broken.tsv")),
        "broken.tsv:2: score 'abc' is not an integer",
    )  # fmt: skip
    (tmp_path / "broken.jsonl").write_text('{"_id": "q1", "text": "a"}\n{oops\n')
    assert_error(
        run("eval", str(folder), "-o", str(out), "--queries", str(tmp_path / "broken.jsonl")),
        "broken.jsonl:2: not a JSON object",
    )
