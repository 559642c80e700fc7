"""Named corpora: ``build --name``, ``-l NAME`` on every file verb, ``urna list``, URNA_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import QUICKSTART_DOCS, assert_error, needs_models, run

pytestmark = needs_models

QUESTION = "how do I install urna on Linux"


def test_home_follows_urna_home_and_the_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urna import library

    monkeypatch.setenv("URNA_HOME", str(tmp_path / "lib"))
    assert library.home() == tmp_path / "lib"
    monkeypatch.delenv("URNA_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr("sys.platform", "linux")
    assert library.home() == tmp_path / "data" / "urna"


def test_list_shows_the_names(in_library: Path) -> None:
    result = run("list")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "CHUNKS", "SIZE", "MODEL"]
    assert lines[1].split()[0] == "guide" and "all-MiniLM-L6-v2" in lines[1]
    assert lines[-1] == f"(1 corpus in {in_library})"
    listed = json.loads(run("list", "--json").stdout)
    assert listed["library"] == str(in_library)
    [entry] = listed["corpora"]
    assert entry["name"] == "guide" and entry["kind"] == "file"
    assert entry["chunks"] > 10 and entry["size"] == (in_library / "guide.urna").stat().st_size


def test_an_empty_library_says_how_to_fill_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("URNA_HOME", str(tmp_path / "none"))
    result = run("list")
    assert result.exit_code == 0 and "--name NAME" in result.stdout


def _citation(name: str) -> str:
    line = run("retrieve", "-l", name, QUESTION, "-k", "1").stdout.splitlines()[0]
    return str(json.loads(line)["citation_id"])


def test_every_file_verb_takes_a_name(in_library: Path) -> None:
    path = str(in_library / "guide.urna")
    citation = _citation("guide")
    vector = json.dumps([0.05] * 384)
    verbs = [
        ["stats"],
        ["validate"],
        ["inspect", "--json"],
        ["cite", citation],
        ["search", vector, "-k", "2"],
        ["search-ann", vector, "-k", "2"],
        ["search-graph", vector, "-k", "2"],
        ["search-text", QUESTION, "-k", "2", "--mode", "text"],
        ["ask", QUESTION, "-k", "2", "--mode", "text"],
        ["retrieve", QUESTION, "-k", "2", "--mode", "text"],
        ["find", QUESTION, "-n", "2", "--mode", "text"],
        ["benchmark", "--queries", "3"],
    ]
    for verb, *rest in verbs:
        by_name = run(verb, "-l", "guide", *rest)
        by_path = run(verb, path, *rest)
        assert by_name.exit_code == 0, (verb, by_name.stderr)
        assert by_path.exit_code == 0, (verb, by_path.stderr)
        if verb not in ("validate", "benchmark", "find"):  # timings differ run to run
            strip = lambda s: [x for x in s.splitlines() if "time" not in x]  # noqa: E731
            assert strip(by_name.stdout) == strip(by_path.stdout), verb
    # -l anywhere on the line, in each spelling
    for args in (
        ["find", QUESTION, "--mode", "text", "-l", "guide"],
        ["find", "--library=guide", QUESTION, "--mode", "text"],
        ["find", "-lguide", "--mode", "text", QUESTION],
        ["find", "--section", "-l", "--library", "guide", QUESTION, "--mode", "text"],
    ):
        result = run(*args)
        assert result.exit_code == 0, (args, result.stderr)
    space = run("search-space", "-l", "guide", vector, "--space", "nope")
    assert_error(space, "nope")  # resolved the name, then refused the unknown space


def test_names_that_are_not_there_or_not_names(in_library: Path) -> None:
    assert_error(run("stats", "-l", "missing"), "no corpus named 'missing' in the library")
    for bad in ("../guide", "guide.urna", ".hidden", "a/b", ""):
        assert_error(run("stats", "-l", bad), "invalid corpus name")
    assert run("stats", "-l", "guide", "-l", "guide").exit_code == 2
    assert run("stats", "-l").exit_code == 2
    assert run("stats", str(in_library / "guide.urna"), "-l", "guide").exit_code == 2


def test_build_by_name_single_file_and_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("URNA_HOME", str(home))
    monkeypatch.chdir(QUICKSTART_DOCS.parent)
    docs = "docs/guide"
    assert run("build", docs, "--name", "one", "--no-bm25").exit_code == 0
    built = run("build", docs, "--name", "many", "--shards", "2")
    assert built.exit_code == 0, built.stderr
    assert (home / "one.urna").is_file() and (home / "many" / "catalog.json").is_file()
    names = [e["name"] for e in json.loads(run("list", "--json").stdout)["corpora"]]
    assert names == ["many", "one"]
    found = run("find", "-l", "many", "install on linux", "--mode", "text", "--json")
    assert found.exit_code == 0 and json.loads(found.stdout)[0]["document"].endswith(".md")
    assert run("build", docs, "--name", "x", "-o", str(tmp_path / "x.urna")).exit_code == 2
    assert_error(run("build", docs, "--name", "one", "--shards", "2"), "as a single file")
    assert_error(run("build", docs, "--name", "no/pe"), "invalid corpus name")
