"""The documentation as a product: a short README with an Install section, a docs site that
builds in strict mode (broken links and pages missing from the navigation fail), reference
pages generated from the code that fail when they drift, every verb, route and MCP tool
documented, an example in every verb's help, no dated narrative, and a Performance page
whose every figure names its command and its results file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
# A rule's reason told as a story of when and where it was measured, not what it is.
NARRATIVE = [
    re.compile(r"\bthis machine\b", re.I),
    re.compile(rf"\b({MONTHS})\s+(\d{{1,2}}|20\d\d)\b"),
    re.compile(
        r"\b(this|that|a|the|last|next|each|every|first|second|third|fourth|fifth|sixth|"
        r"earlier|later|previous|same)\s+session\b",
        re.I,
    ),
    re.compile(r"\b[Ii]ssue\s+#?\d+\b"),
]


def _reference() -> object:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import reference
    finally:
        sys.path.pop(0)
    return reference


def test_the_readme_is_short_and_says_how_to_install() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
    assert "## Install" in lines and "## The two commands" in lines
    assert (ROOT / "CONTRIBUTING.md").is_file() and (ROOT / "CHANGELOG.md").is_file()


def test_no_dated_narrative_in_readme_docs_or_code() -> None:
    paths = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"]
    paths += sorted(DOCS.rglob("*.md")) + sorted((ROOT / "src").rglob("*.py"))
    found = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()[:80]}"
        for p in paths
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if any(rule.search(line) for rule in NARRATIVE)
    ]
    assert not found, "\n".join(found)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """mkdocs in strict mode: a broken link, a missing page or a page left out of the
    navigation is a warning, and a warning fails. Nothing is fetched (no web fonts)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    page = (tmp_path / "site" / "reference" / "python" / "index.html").read_text()
    assert "SearchResult" in page and "expect_model_hash" in page  # mkdocstrings read the code
    assert "fonts.googleapis" not in (tmp_path / "site" / "index.html").read_text()


def test_the_generated_reference_pages_are_current() -> None:
    reference = _reference()
    for name, make in reference.PAGES.items():  # type: ignore[attr-defined]
        committed = (DOCS / "reference" / name).read_text(encoding="utf-8")
        assert committed == make(), f"docs/reference/{name} drifted: run scripts/reference.py"


def test_every_verb_route_and_tool_is_documented() -> None:
    import asyncio

    from urna.cli.app import cli
    from urna.cli.examples import EXAMPLES, GROUPS
    from urna.server.app import create_app
    from urna.server.databases import Databases
    from urna.server.mcp import create_mcp

    commands = set(cli.commands)
    grouped = [n for _, names in GROUPS for n in names]
    assert sorted(grouped) == sorted(commands) and set(EXAMPLES) == commands
    cli_page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    verbs_page = (DOCS / "reference" / "verbs.md").read_text(encoding="utf-8")
    for name in commands:
        assert f"### urna {name}\n" in cli_page and f"Example: {EXAMPLES[name]}" in cli_page
        assert f"urna {name}" in verbs_page, name
    http_page = (DOCS / "reference" / "http.md").read_text(encoding="utf-8")
    for path, methods in create_app(Databases(), mcp=False).openapi()["paths"].items():
        for method in methods:
            assert f"## `{method.upper()} {path}`" in http_page
    mcp_page = (DOCS / "reference" / "mcp.md").read_text(encoding="utf-8")
    for tool in asyncio.run(create_mcp(Databases()).list_tools()):
        assert f"## `{tool.name}`" in mcp_page


@pytest.mark.parametrize("verb", ["find", "build", "serve", "cite"])
def test_every_verb_help_has_an_example(verb: str) -> None:
    from urna.cli.examples import EXAMPLES

    shown = run(verb, "--help")
    assert shown.exit_code == 0 and f"Example: {EXAMPLES[verb]}" in shown.stdout


def test_top_level_help_groups_the_verbs() -> None:
    shown = run("--help").stdout
    heads = ["Search:", "Inspect:", "Build and maintain:", "Serve:"]
    assert all(h in shown for h in heads)
    assert [shown.index(h) for h in heads] == sorted(shown.index(h) for h in heads)


def test_every_figure_on_the_performance_page_names_its_command_and_results() -> None:
    """Each section of the page names the command that measures it and the committed
    results file it was drawn from; each chart exists."""
    text = (DOCS / "performance.md").read_text(encoding="utf-8")
    sections = re.split(r"\n## ", text)[1:]
    assert sections
    for section in sections:
        title = section.splitlines()[0]
        if not re.search(r"\d", section.split("\n", 1)[1]):
            continue  # no figure in it
        results = re.findall(r"benchmarks/results/[\w.-]+\.json", section)
        assert results, f"{title}: names no results file"
        assert all((ROOT / r).is_file() for r in results), title
        assert re.search(r"python (benchmarks|scripts)/\w+\.py|urna eval", section), title
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (DOCS / image).is_file(), image
