"""The public API is small and deliberate: nothing leaks, nothing goes missing."""

from __future__ import annotations

import urna

EXPECTED = {
    "BuildError",
    "BuildResult",
    "Chunk",
    "ChunkInput",
    "Citation",
    "Collection",
    "CitationError",
    "Corpus",
    "FileError",
    "FormatError",
    "Hit",
    "IntegrityError",
    "ModelError",
    "ModelGateError",
    "Query",
    "QueryError",
    "SearchResult",
    "Searchable",
    "Section",
    "SourceMismatchError",
    "UrnaError",
    "__version__",
    "build",
    "open",
    "parse_citation",
}


def test_exported_members() -> None:
    assert set(urna.__all__) == EXPECTED
    for name in urna.__all__:
        assert hasattr(urna, name), name


def test_every_error_is_an_urna_error() -> None:
    for name in urna.__all__:
        obj = getattr(urna, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, urna.UrnaError), name


def test_no_internal_names_leak() -> None:
    public = {n for n in vars(urna) if not n.startswith("_")}
    # Subpackages are importable by path, but only the curated names are the API.
    assert public - EXPECTED <= {
        "build",
        "errors",
        "format",
        "search",
        "ingest",
        "embed",
        "index",
        "evaluate",
        "cli",
        "server",
        "library",
        "integrations",
        "version",
        "native",
    }
