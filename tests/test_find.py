"""``urna find``: its human output and its --json, against golden files
(URNA_UPDATE_GOLDEN=1 rewrites them), in every mode, with a long section path, weaker matches
and no hits.

The library is embedded by the real model, so its content_hash and the last digits of its
scores are this CPU's float arithmetic: the goldens hold ``<content_hash>`` in its place,
and each printed number is compared within one unit of its last printed digit."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.conftest import needs_models, run

pytestmark = needs_models
GOLDEN = Path(__file__).parent / "golden"


NUMBER = re.compile(r"-?\d+\.\d+")


def _check(name: str, text: str, content_hash: str) -> None:
    golden = GOLDEN / name
    text = _masked(text, content_hash)
    if os.environ.get("URNA_UPDATE_GOLDEN"):
        golden.write_text(text)
    want = golden.read_text()
    assert NUMBER.sub("<n>", text) == NUMBER.sub("<n>", want), f"output differs from {golden}"
    for got, expected in zip(NUMBER.findall(text), NUMBER.findall(want), strict=True):
        unit = 10.0 ** -len(expected.partition(".")[2])
        assert abs(float(got) - float(expected)) <= 1.01 * unit, (golden, got, expected)


def _masked(text: str, content_hash: str) -> str:
    digest = content_hash.removeprefix("sha256:")
    text = text.replace(digest, "<content_hash>")
    return re.sub(rf"urna://sha256:{digest[:4]}\.\.\./", "urna://<content_hash>/", text)


@pytest.fixture
def guide_hash(in_library: Path) -> str:
    import urna
    from urna.library import resolve as resolve_name

    with urna.open(resolve_name("guide")) as corpus:
        return str(corpus.content_hash)


def _normalize(text: str) -> str:
    return re.sub(r", \d+ ms\)$", ", <T> ms)", text, flags=re.MULTILINE)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("find-hybrid.txt", ["how do I install urna on Linux", "-n", "3"]),
        ("find-vector.txt", ["how do I install urna on Linux", "-n", "2", "--mode", "vector"]),
        ("find-text.txt", ["citation checked against its source", "-n", "2", "--mode", "text"]),
        ("find-long-path.txt", ["paramount lien on Reserve Bank assets", "-n", "1"]),
        ("find-none.txt", ["zyxwvut", "--mode", "text"]),
        ("find-weaker.txt", ["how is a citation checked against its source", "-n", "4"]),
        (
            "find-filtered.txt",
            ["install", "-n", "2", "--section", "Guide / Install", "--mode", "text"],
        ),
    ],
)
def test_human_output(in_library: Path, guide_hash: str, name: str, args: list[str]) -> None:
    result = run("find", "-l", "guide", *args)
    assert result.exit_code == 0, result.stderr
    assert "\x1b[" not in result.stdout  # no colour off a terminal
    _check(name, _normalize(result.stdout), guide_hash)


def test_json_output(in_library: Path, guide_hash: str) -> None:
    result = run("find", "-l", "guide", "how do I install urna on Linux", "-n", "2", "--json")
    assert result.exit_code == 0, result.stderr
    hits = json.loads(result.stdout)
    assert [h["rank"] for h in hits] == [1, 2]
    for h in hits:
        assert set(h) >= {"score", "chunk", "document", "file", "path", "text", "ranks"}
        assert h["citation_id"] == f"urna://{h['content_hash']}/{h['chunk']}"
        assert set(h["ranks"]) == {"vector", "text"}
    text_only = json.loads(run("find", "-l", "guide", "install", "--mode", "text", "--json").stdout)
    assert text_only and all("ranks" not in h for h in text_only)  # ranks on fused hits only
    # Scores to 4 decimals: the fast query path and the reference agree to ~1e-7, not 1e-16.
    _check("find.json", json.dumps(_rounded(hits), ensure_ascii=False, indent=2) + "\n", guide_hash)


def _rounded(value: object) -> object:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def test_citations_resolve_and_spans_are_the_source_bytes(in_library: Path) -> None:
    hits = json.loads(run("find", "-l", "guide", "model gate", "--json").stdout)
    cited = run("cite", "-l", "guide", hits[0]["citation_id"], "--verify-source")
    assert cited.exit_code == 0, cited.stderr
    assert "ok (bytes match the stored text)" in cited.stdout


def test_colour_on_a_terminal_only(in_library: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from urna.cli.app import cli

    args = ["find", "-l", "guide", "install", "--mode", "text", "-n", "1"]
    coloured = CliRunner().invoke(cli, args, color=True)
    assert "\x1b[1m" in coloured.stdout and "\x1b[33m" in coloured.stdout  # bold, marked terms
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in CliRunner().invoke(cli, args, color=True).stdout


def test_short_path_cuts_from_the_left() -> None:
    from urna.cli.find import short_path

    assert short_path("Guide / Install") == "Guide / Install"
    long = "Federal Reserve Banks / Notes to the Statements / Policies / l. Federal Reserve Notes"
    assert short_path(long) == "… / Policies / l. Federal Reserve Notes"
    assert short_path("x" * 60, width=20) == "…" + "x" * 19
    assert len(short_path(long, width=30)) <= 30


def test_bad_input(in_library: Path) -> None:
    assert run("find", "-l", "guide", "q", "-n", "0").stderr == "Error: invalid k: 0\n"
    assert run("find", "-l", "guide", "q", "-n", "none").exit_code == 2
    # -k and --limit are find's names too (every search verb's), -n fluree's alias.
    answers = [
        run("find", "-l", "guide", "install", "--mode", "text", name, "2", "--json").stdout
        for name in ("-k", "--limit", "-n")
    ]
    assert answers[0] == answers[1] == answers[2] and len(json.loads(answers[0])) == 2
    assert run("find", "-l", "guide", "q", "--mode", "bogus").exit_code == 2
    result = run("find", "-l", "guide", "   ", "--mode", "text")
    assert result.exit_code == 1 and result.stderr.startswith("Error: ")


def test_snippets_leave_markdown_markup_out() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from urna.search.snippet import plain

    source = (
        "## Install\n\nRun **pip install** `urna` from [PyPI](https://pypi.org), see *the guide*"
        " and ![a diagram](d.png).\n\n- one\n- [x] two\n> quoted\n\n| a | b |\n|---|---|\n"
        "| 1 | 2 |\n\nA citation `urna://<content_hash>/<chunk_id>` and snake_case_names."
    )
    flat = " ".join(plain(source, "docs/a.md").split())
    assert flat == (
        "Install Run pip install urna from PyPI, see the guide and a diagram. one two quoted"
        " a b 1 2 A citation urna://<content_hash>/<chunk_id> and snake_case_names."
    )
    assert plain(source, "notes.txt") == source  # only Markdown sources lose markup

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet="#*_`[]()!<>|-~ \nab1", max_size=200))
    def never_fails(text: str) -> None:
        assert isinstance(plain(text, "x.md"), str)

    never_fails()
