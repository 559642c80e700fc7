"""What goes in, as people expect from their tools: --include / --exclude read as .gitignore
reads patterns, .gitignore and .urnaignore inside a source folder respected (--no-ignore
reads everything), and the source a documentation generator copies beside a page it
rendered (Sphinx's ``_sources/x.rst.txt`` for ``x.html``) read once, as the page."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import needs_models, run
from urna.build.discover import discover
from urna.build.documents import found_files
from urna.build.spec import spec_from_args


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _uris(root: Path, **options: object) -> list[str]:
    spec = spec_from_args([root], root.parent / "out.urna", **options)  # type: ignore[arg-type]
    said: list[str] = []
    files = found_files(spec, None, said.append)
    return [f.source_uri.removeprefix(f"{root.name}/") for f in files]


def test_ignore_files_are_respected_as_ripgrep_does(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _tree(
        docs,
        {
            ".gitignore": "build/\n*.log.md\n!keep.log.md\n",
            "a.md": "# A\n",
            "build/out.md": "# generated\n",
            "x.log.md": "# log\n",
            "keep.log.md": "# kept\n",
            "sub/.urnaignore": "drafts/\n/local.md\n",
            "sub/drafts/d.md": "# draft\n",
            "sub/local.md": "# local\n",
            "sub/b.md": "# B\n",
            "sub/deeper/local.md": "# only the top local.md of sub is ignored\n",
            ".hidden/h.md": "# hidden\n",
        },
    )
    assert _uris(docs) == ["a.md", "keep.log.md", "sub/b.md", "sub/deeper/local.md"]
    everything = _uris(docs, ignore_files=False)
    assert "build/out.md" in everything and "sub/drafts/d.md" in everything
    assert not any(u.startswith(".hidden") for u in everything)


def test_include_and_exclude_read_patterns_as_gitignore_does(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _tree(docs, {"a.md": "", "n/b.md": "", "n/c.txt": "", "drafts/d.md": "", "n/drafts/e.md": ""})
    assert _uris(docs, include=("*.md",)) == ["a.md", "drafts/d.md", "n/b.md", "n/drafts/e.md"]
    assert _uris(docs, exclude=("drafts/",)) == ["a.md", "n/b.md", "n/c.txt"]
    assert _uris(docs, include=("n/**",), exclude=("*.txt",)) == ["n/b.md", "n/drafts/e.md"]
    files, _ = discover(spec_from_args([docs], tmp_path / "o.urna").sources, tmp_path)
    assert len(files) == 5


def test_a_rendered_pages_own_source_is_read_once(tmp_path: Path) -> None:
    html = tmp_path / "html"
    _tree(
        html,
        {
            "tutorial/intro.html": "<html><body><p>Intro</p></body></html>",
            "_sources/tutorial/intro.rst.txt": "Intro\n=====\n",
            "_sources/orphan.rst.txt": "No page of its own: kept\n",
            "guide.html": "<html><body><p>Guide</p></body></html>",
            "_sources/guide.txt": "Guide\n",
        },
    )
    spec = spec_from_args([html], tmp_path / "out.urna")
    said: list[str] = []
    files = found_files(spec, None, said.append)
    uris = sorted(f.source_uri for f in files)
    assert uris == ["html/_sources/orphan.rst.txt", "html/guide.html", "html/tutorial/intro.html"]
    assert sum("the source of the rendered page" in line for line in said) == 2, said


@needs_models
def test_the_cli_takes_include_exclude_and_no_ignore(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _tree(docs, {".gitignore": "skip.md\n", "a.md": "# A\n\nbees.\n", "skip.md": "# S\n\nwasps.\n"})
    _tree(docs, {"b.txt": "plain text about ants.\n"})
    out = str(tmp_path / "o.urna")

    def files(*args: str) -> int:
        result = run("build", str(docs), "-o", out, "--model", "static", "--dry-run", *args)
        assert result.exit_code == 0, result.stderr
        return int(result.stdout.split("files:")[1].split()[0])

    assert files() == 2
    assert files("--no-ignore") == 3
    assert files("--include", "*.md") == 1
    assert files("--exclude", "*.txt", "--no-ignore") == 2


def test_an_ignore_file_that_links_out_of_the_folder_is_not_read(tmp_path: Path) -> None:
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    _tree(docs, {"a.md": "# A\n", "b.md": "# B\n"})
    _tree(outside, {"patterns": "*.md\n"})
    (docs / ".gitignore").symlink_to(outside / "patterns")
    assert _uris(docs) == ["a.md", "b.md"]  # its patterns would have ignored both
