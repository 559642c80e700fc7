"""Bad queries, bad files and bad usage: one clear error, the right exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import assert_error, needs_models, run


@pytest.mark.parametrize(
    ("query", "k", "fragment"),
    [
        ("[1, 0", "1", "invalid query JSON"),
        ("not json", "1", "invalid query JSON"),
        ('{"a": 1}', "1", "expected an array of numbers, got an object"),
        ('[1, "x", 0, 0]', "1", "element 1 is a string"),
        ("[1, true, 0, 0]", "1", "element 1 is a boolean"),
        ("[[1], 0, 0, 0]", "1", "element 0 is an array"),
        ("[0.1, 0.2]", "1", "dimension mismatch: expected 4, got 2"),
        ("[NaN, 0, 0, 0]", "1", "NaN or Inf in query"),
        ("[Infinity, 0, 0, 0]", "1", "NaN or Inf in query"),
        ("[1e999, 0, 0, 0]", "1", "NaN or Inf in query"),
        ("[0, 0, 0, 0]", "1", "zero-norm query"),
        ("[]", "1", "empty query"),
    ],
)
def test_bad_query(five_file: Path, query: str, k: str, fragment: str) -> None:
    assert_error(run("search", str(five_file), query, "-k", k), fragment)


def _search_verbs() -> dict[str, list[str]]:
    """Every verb that returns hits, and the names its hit count goes by."""
    from urna.cli.app import cli

    out = {}
    for name, command in cli.commands.items():
        for param in command.params:
            if "-k" in getattr(param, "opts", []):
                out[name] = list(param.opts) + list(getattr(param, "secondary_opts", []))
    return out


def test_every_search_verb_takes_k_and_limit_with_one_range_check(five_file: Path) -> None:
    """-k / --limit on every verb that returns hits (find also keeps fluree's -n), checked
    the same way before anything runs: as the urna seed says, a number of 0 or less is an
    error (``Error: invalid k: 0``, exit 1) and a non-number a usage error (exit 2)."""
    verbs = _search_verbs()
    expected = {"search", "search-ann", "search-graph", "search-text", "ask", "retrieve", "find"}
    assert expected <= set(verbs), verbs
    for verb, names in verbs.items():
        assert "-k" in names and "--limit" in names, (verb, names)
        for name in names:
            for bad in ("0", "-3"):
                result = run(verb, str(five_file), "[]", name, bad)
                assert result.stderr == f"Error: invalid k: {int(bad)}\n", (verb, name, bad)
                assert_error(result, code=1)
            args = [verb, str(five_file), "[]", name, "ten"]
            result = run(*args)
            assert_error(result, code=2)
            assert "Invalid value for '-k' / '--limit'" in result.stderr, (args, result.stderr)
    assert "-n" in verbs["find"]
    shown = run("search", str(five_file), "[1, 0, 0, 0]", "--limit", "2", "--json")
    assert shown.exit_code == 0 and len(json.loads(shown.stdout)["hits"]) == 2


def test_bad_file_arguments(tmp_path: Path) -> None:
    empty = tmp_path / "empty.urna"
    empty.write_bytes(b"")
    text = tmp_path / "notes.txt"
    text.write_text("just some text, certainly not a .urna container\n" * 10)
    cases = {
        str(tmp_path / "missing.urna"): "file not found",
        str(tmp_path): "is a directory",
        str(empty): "file truncated",
        str(text): "magic mismatch",
    }
    for path, fragment in cases.items():
        for verb in (
            ["search", path, "[1,0,0,0]"],
            ["stats", path],
            ["validate", path],
            ["inspect", path, "--json"],
            ["cite", path, "urna://x"],
        ):
            assert_error(run(*verb), fragment)


@pytest.mark.parametrize(
    "args",
    [
        ["search"],
        ["search", "f.urna"],
        ["search", "f.urna", "[1]", "-k", "abc"],
        ["search", "f.urna", "[1]", "--bogus"],
        ["nonsense-verb"],
        ["cite", "f.urna"],
        ["build", "-o", "x.urna"],
        ["build", "--from-jsonl", "c.jsonl", "-o", "x.urna", "--model", "m", "--dim", "0"],
        ["benchmark", "f.urna", "--queries", "0"],
        ["serve", "f.urna", "--interval", "0"],
        ["search-text", "f.urna", "hello", "--mode", "fuzzy"],
        ["ask", "f.urna", "hello", "--fusion", "average"],
        ["build", "docs", "-o", "x.urna", "--preset", "huge"],
        ["build", "docs", "-o", "x.urna", "--dtype", "float64"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert "Usage:" in result.stderr


def test_console_script_exit_codes_and_streams(five_file: Path, tmp_path: Path) -> None:
    """The installed `urna` executable, as a user runs it."""
    exe = Path(sys.executable).with_name("urna")
    env = {k: v for k, v in os.environ.items() if k != "URNA_DEBUG"}

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(exe), *args], capture_output=True, text=True, env=env, timeout=60, check=False
        )

    ok = call("search", str(five_file), "[1,0,0,0]", "-k", "1")
    assert ok.returncode == 0 and ok.stderr == "" and "score=1.000000" in ok.stdout
    bad = call("search", str(five_file), "[0.1, 0.2]")
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr == "Error: dimension mismatch: expected 4, got 2\n"
    corrupt = tmp_path / "corrupt.urna"
    data = bytearray(five_file.read_bytes())
    data[-1] ^= 1
    corrupt.write_bytes(data)
    broken = call("validate", str(corrupt))
    assert broken.returncode == 1 and broken.stderr.startswith("Error: footer hash mismatch")
    assert "Traceback" not in broken.stderr and broken.stderr.count("\n") == 1
    usage = call("search", str(five_file))
    assert usage.returncode == 2 and "Usage:" in usage.stderr


def test_hostile_arguments_get_one_error_line(tmp_path: Path) -> None:
    """A symlink loop, an argument that is not UTF-8, a chunk size below 8: exit 1 or 2 with
    one message, never a traceback."""
    import json as _json
    import subprocess
    import sys

    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")
    out = str(tmp_path / "o.urna")
    looped = subprocess.run(
        [sys.executable, "-m", "urna", "build", str(loop), "-o", out],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert looped.returncode == 1 and looped.stderr.startswith("Error: "), looped.stderr
    assert "Traceback" not in looped.stderr
    chunks = tmp_path / "c.jsonl"
    chunks.write_text(
        _json.dumps({"text": "hi", "source_uri": "a", "byte_start": 0, "byte_end": 2,
                     "embedding": [1, 0]}) + "\n"
    )  # fmt: skip
    titled = subprocess.run(
        [sys.executable, "-m", "urna", "build", "--from-jsonl", str(chunks), "--dim", "2",
         "--model", "m", "-o", out, "--title", b"caf\xe9"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert titled.returncode == 1, titled.stderr
    assert titled.stderr.startswith("Error: text that is not valid UTF-8"), titled.stderr
    for bad in ("0", "-3", "7"):
        result = run("build", str(tmp_path), "-o", out, "--max-tokens", bad)
        assert result.exit_code == 2 and "--max-tokens" in result.output, result.output


@needs_models
def test_build_makes_its_output_folder_and_names_a_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Notes\n\nBees swarm in spring.\n")
    deep = tmp_path / "out" / "nested" / "a.urna"
    result = run("build", str(tmp_path / "a.md"), "-o", str(deep), "--model", "static")
    assert result.exit_code == 0, result.stderr
    assert deep.is_file()
    (tmp_path / "blocker").write_text("")
    for extra in ([], ["--shards", "2"]):
        target = tmp_path / "blocker" / "x.urna"
        result = run(
            "build", str(tmp_path / "a.md"), "-o", str(target), "--model", "static", *extra
        )
        assert_error(result, "cannot create output folder")
        assert (tmp_path / "blocker").read_text() == ""


def test_messages_a_person_can_act_on(tmp_path: Path, five_file: Path) -> None:
    """A document given where a .urna file goes names what it is and how to build one; a
    where-filter that is not JSON shows one that is; a glob that matches nothing is an
    error, not 0 chunks."""
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nBees swarm in spring.\n")
    said = assert_error(run("find", str(notes), "bees"), "is a markdown document, not a .urna")
    assert "urna build" in said and "notes.urna" in said
    said = assert_error(run("search", str(five_file), "[1, 0, 0, 0]", "--where", "year >= 2020"))
    assert '{"year": {"$gte": 2020}}' in said
    assert_error(run("search", str(five_file), "[1, 0, 0, 0]", "--source", "["), "matches nothing")
