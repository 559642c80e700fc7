"""Real documentation trees as a generator writes them: a small Sphinx-like site made here
(pages with navigation, sidebars, permalink glyphs, ``_sources/`` copies, a generated
index, a page copied under another name), built from a spec whose sources lie outside the
spec's folder; and citations that verify with no flag, in the CLI and over MCP."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import anyio
import pytest

import urna
from tests.conftest import run
from tests.stored_vectors import StoredVectors
from urna.build.spec import load_spec, spec_from_args
from urna.build.writer import build_file, build_folder
from urna.ingest.html import load_html
from urna.search.cite import check_source

CHROME = ("Previous topic", "Next topic", "Quick search", "This Page", "Show Source", "¶")


def _page(title: str, sections: list[tuple[str, str]]) -> str:
    """A page as Sphinx writes one: header and related links, a sidebar, a footer, and the
    body in ``role=main`` with a permalink after every heading."""
    body = "".join(
        f'<section id="s{i}"><h2>{name}<a class="headerlink" href="#s{i}" '
        f'title="Permalink to this heading">¶</a></h2><p>{text}</p></section>'
        for i, (name, text) in enumerate(sections)
    )
    return (
        f"<!DOCTYPE html><html><head><title>{title} — Demo 1.0 documentation</title></head>"
        '<body><div class="related" role="navigation"><ul><li><a href="genindex.html">index'
        '</a></li><li><a href="b.html">next</a></li></ul></div>'
        '<div class="document"><div class="body" role="main">'
        f'<h1>{title}<a class="headerlink" href="#top" title="Permalink">¶</a></h1>{body}'
        '</div></div><div class="sphinxsidebar" role="navigation"><h3>Previous topic</h3>'
        '<p><a href="a.html">Alpha</a></p><h3>Next topic</h3><p><a href="b.html">Beta</a></p>'
        '<h3>This Page</h3><ul><li><a href="_sources/a.rst.txt">Show Source</a></li></ul>'
        '<div role="search"><h3>Quick search</h3><form><input name="q"/></form></div></div>'
        '<footer class="footer">© Copyright Demo authors.</footer></body></html>'
    )


def _site(root: Path) -> None:
    (root / "guide").mkdir(parents=True)
    (root / "_sources" / "guide").mkdir(parents=True)
    alpha = _page(
        "Alpha tuning",
        [
            ("Tuples and sequences", "A tuple holds values separated by commas, like pairs."),
            ("Keys and errors", "A missing dictionary key raises KeyError when it is looked up."),
        ],
    )
    (root / "guide" / "a.html").write_text(alpha)
    (root / "_sources" / "guide" / "a.rst.txt").write_text("Alpha tuning\n============\n")
    (root / "guide" / "b.html").write_text(
        _page("Beta routing", [("Sockets", "A socket connects two processes over a network.")])
    )
    # The same page saved again under another name: the same text, another file.
    (root / "guide" / "copy-of-a.html").write_text(alpha.replace("Demo 1.0", "Demo 1.0 (mirror)"))
    links = "".join(f'<li><a href="guide/a.html#s{i}">entry {i}</a></li>' for i in range(80))
    (root / "genindex.html").write_text(
        f'<html><body><div role="main"><h1>Index</h1><ul>{links}</ul></div></body></html>'
    )


@pytest.fixture
def outside(tmp_path: Path) -> tuple[Path, Path]:
    """(a spec in one folder, the site it names in another)."""
    site = tmp_path / "elsewhere" / "html"
    _site(site)
    spec = tmp_path / "project" / "urna.toml"
    spec.parent.mkdir()
    spec.write_text(f'[output]\npath = "docs.urna"\n\n[[sources]]\npath = "{site}"\n')
    return spec, site


def test_a_sphinx_site_is_read_as_its_reader_sees_it(outside: tuple[Path, Path]) -> None:
    spec_path, _ = outside
    said: list[str] = []
    build_file(load_spec(spec_path), embedder=StoredVectors(), warn=said.append)
    with urna.open(spec_path.parent / "docs.urna") as corpus:
        chunks = [corpus.chunk(i) for i in range(corpus.n_chunks)]
    uris = sorted({c.source_uri for c in chunks})
    assert uris == ["guide/a.html", "guide/b.html"]  # each document once, named under its root
    for c in chunks:
        assert ".." not in c.source_uri
        assert not any(mark in c.text or mark in c.section_path for mark in CHROME), c
    assert {c.section_path for c in chunks} >= {
        "Alpha tuning / Tuples and sequences",
        "Alpha tuning / Keys and errors",
        "Beta routing / Sockets",
    }
    told = "\n".join(said)
    assert "_sources/guide/a.rst.txt: the source of the rendered page guide/a.html" in told
    assert "genindex.html: a page of links" in told
    assert "guide/copy-of-a.html: the same text as guide/a.html" in told


def test_a_citation_verifies_with_no_flag_in_the_cli_and_over_mcp(
    outside: tuple[Path, Path], tmp_path: Path
) -> None:
    spec_path, site = outside
    build_file(load_spec(spec_path), embedder=StoredVectors())
    file = spec_path.parent / "docs.urna"
    with urna.open(file) as corpus:
        citation = corpus.chunk(corpus.n_chunks - 1).citation_id
    checked = run("cite", str(file), citation, "--verify-source")
    assert checked.exit_code == 0, checked.stderr
    assert f"source:       {site.resolve()}/guide/" in checked.stdout
    if importlib.util.find_spec("mcp") is not None:
        assert "ok:" in _mcp_cite(file, citation, None)["source_check"]
    # The tree moves: the recorded root no longer holds it, and --source-root names the new.
    moved = tmp_path / "moved"
    shutil.move(site, moved)
    assert run("cite", str(file), citation, "--verify-source").exit_code == 1
    again = run("cite", str(file), citation, "--verify-source", "--source-root", str(moved))
    assert again.exit_code == 0, again.stderr
    if importlib.util.find_spec("mcp") is not None:
        assert "ok:" in _mcp_cite(file, citation, str(moved))["source_check"]


def _mcp_cite(file: Path, citation: str, root: str | None) -> dict[str, object]:
    """The MCP server's cite tool, called by the SDK's client over its in-memory transport."""
    from mcp import Client

    from urna.server.databases import Databases
    from urna.server.mcp import create_mcp

    dbs = Databases()
    dbs.corpora["docs"] = urna.open(file)
    args: dict[str, object] = {"citation": citation, "verify_source": True}
    if root is not None:
        args["source_root"] = root
    got: dict[str, object] = {}

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(create_mcp(dbs)) as client:
                result = await client.call_tool("cite", args)
                assert not result.is_error, result
                got.update(json.loads(result.content[0].text))

    try:
        anyio.run(main)
    finally:
        dbs.corpora["docs"].close()
    return got


def test_duplicates_are_the_same_after_updates_as_after_a_full_build(tmp_path: Path) -> None:
    """The document kept of each text is the smallest name, however the files arrived."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.md").write_text("# Same\n\nOne text saved twice.\n")
    (src / "z.md").write_text("# Other\n\nA text of its own.\n")
    vectors = StoredVectors()
    coll = tmp_path / "coll"
    spec = spec_from_args([src], coll, preset="exact")
    build_folder(spec, shards=2, embedder=vectors)
    (src / "b.md").write_text("# Same\n\nOne text saved twice.\n")  # sorts first: replaces m
    build_folder(spec, shards=2, embedder=vectors)
    (src / "n.md").write_text("# Same\n\nOne text saved twice.\n")  # a third copy: skipped
    build_folder(spec, shards=2, embedder=vectors)
    updated = _live(coll)
    assert updated == ["src/b.md", "src/z.md"]
    full = tmp_path / "full"
    build_folder(spec_from_args([src], full, preset="exact"), shards=2, embedder=vectors)
    assert _live(full) == updated
    (src / "b.md").unlink()  # the one kept goes: the next copy comes back
    build_folder(spec, shards=2, embedder=vectors)
    assert _live(coll) == ["src/m.md", "src/z.md"]


def _live(folder: Path) -> list[str]:
    with urna.open(folder) as corpus:
        return sorted({corpus.chunk(i).source_uri for i in range(corpus.n_chunks)})


def test_a_page_verifies_by_the_extractor_its_file_was_built_with(tmp_path: Path) -> None:
    """A file built before extractors were recorded (the whole body, version 1) still
    verifies: the page is extracted again as that version read it."""
    page = tmp_path / "a.html"
    page.write_text(_page("Alpha tuning", [("Sockets", "A socket joins two processes.")]))
    whole = load_html(page.read_bytes(), "a.html", 1)
    main = load_html(page.read_bytes(), "a.html")
    assert b"Previous topic" in whole.data and b"Previous topic" not in main.data
    span = whole.data.index(b"Previous topic")
    expected = whole.data[span : span + 20]
    assert check_source("a.html", span, span + 20, expected, [tmp_path], {}) == page.resolve()
    with pytest.raises(urna.SourceMismatchError):
        check_source("a.html", span, span + 20, expected, [tmp_path], None)
