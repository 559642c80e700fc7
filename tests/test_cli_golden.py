"""Exact CLI output, checked against golden files (URNA_UPDATE_GOLDEN=1 rewrites them)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.conftest import run

GOLDEN = Path(__file__).parent / "golden"


def _normalize(text: str, path: Path) -> str:
    text = text.replace(str(path), "<FILE>")
    text = re.sub(r"query_time:   \d+\.\d{3} ms", "query_time:   <T> ms", text)
    return re.sub(r"\"query_time_ms\": [0-9.]+", '"query_time_ms": "<T>"', text)


def _check(name: str, text: str) -> None:
    golden = GOLDEN / name
    if os.environ.get("URNA_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text(), f"output differs from {golden}"


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("search-five.txt", ["search", "{f}", "[0.2, 1.0, 0.0, 0.0]", "-k", "3"]),
        ("search-five.json", ["search", "{f}", "[0.2, 1.0, 0.0, 0.0]", "-k", "2", "--json"]),
        ("stats-five.txt", ["stats", "{f}"]),
        ("inspect-five.txt", ["inspect", "{f}"]),
        ("inspect-five.json", ["inspect", "{f}", "--json"]),
    ],
)
def test_output(five_file: Path, name: str, args: list[str]) -> None:
    result = run(*[a.replace("{f}", str(five_file)) for a in args])
    assert result.exit_code == 0, result.stderr
    _check(name, _normalize(result.stdout, five_file))


def test_cite_output(five_file: Path) -> None:
    hit = json.loads(run("search", str(five_file), "[0, 0, 1, 0]", "-k", "1", "--json").stdout)
    result = run("cite", str(five_file), hit["hits"][0]["citation_id"])
    assert result.exit_code == 0, result.stderr
    _check("cite-five.txt", _normalize(result.stdout, five_file))
