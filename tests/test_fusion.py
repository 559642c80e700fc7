"""Fusion reads its parameters from the file: the default, the text calibration and its
scale, RRF's k."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import needs_models
from tests.forge import put_together, take_apart
from urna.format.fusion import FusionParams
from urna.search.feedback import rocchio
from urna.search.fusion import confidence
from urna.search.text import default_candidates

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart" / "docs"


def _chunks() -> list[dict[str, object]]:
    out = []
    for path in sorted(QUICKSTART.rglob("*.md")):
        data = path.read_bytes()
        for start, block in _paragraphs(data):
            out.append(
                {
                    "text": block.decode(),
                    "source_uri": path.relative_to(QUICKSTART).as_posix(),
                    "byte_start": start,
                    "byte_end": start + len(block),
                }
            )
    return out


def _paragraphs(data: bytes) -> list[tuple[int, bytes]]:
    out, pos = [], 0
    for part in data.split(b"\n\n"):
        if part.strip():
            out.append((pos, part))
        pos += len(part) + 2
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from urna.embed.registry import resolve

    embedder = resolve("minilm")
    chunks = _chunks()
    vectors = embedder.embed([str(c["text"]) for c in chunks])
    folder = tmp_path_factory.mktemp("fusion")
    files = {}
    for name, params in (
        ("default", None),
        ("sharp", FusionParams(text_calibration=2.5)),
        ("rrf", FusionParams(default="rrf", rrf_k=5)),
        ("one-pass", replace(FusionParams.for_build(), feedback_docs=0, feedback_weight=0.0)),
    ):
        files[name] = folder / f"{name}.urna"
        urna.build(
            files[name],
            chunks,
            embeddings=vectors,
            model=embedder.name,
            model_hash=embedder.model_hash,
            chunker_version="paragraphs/1",
            bm25=True,
            fusion=params,
        )
    return files


@needs_models
def test_hybrid_scores_use_the_recorded_parameters(built: dict[str, Path]) -> None:
    query = "how is a citation checked against its source?"
    for name, calibration in (("default", 0.5), ("sharp", 2.5)):
        with urna.open(built[name]) as corpus:
            recorded = corpus.manifest["fusion"]
            assert recorded["text_calibration"] == calibration
            if name == "default":  # a build scales C by the query's idf sum
                assert recorded["text_scale"] == "query_idf"
                bm25 = corpus.bm25
                assert bm25 is not None
                idf_sum = bm25.idf_sum(bm25.tokenize(query))
                assert idf_sum > 5
                calibration *= idf_sum
            else:  # a file that records no scale keeps C fixed
                assert "text_scale" not in recorded
            result = corpus.search_text(query, k=5, mode="hybrid")
            assert result.hits[0].score_type == "calibrated"
            for hit in result.hits:
                expected = (
                    sum(confidence(m, r["score"], calibration) for m, r in hit.ranks.items()) / 2
                )
                assert hit.score == pytest.approx(expected, abs=1e-9)
    with urna.open(built["rrf"]) as corpus:
        result = corpus.search_text(query, k=5, mode="hybrid")
        assert result.hits[0].score_type == "rrf"  # the file's recorded default
        for hit in result.hits:
            assert hit.score == pytest.approx(sum(1 / (5 + r["rank"]) for r in hit.ranks.values()))
        asked = corpus.search_text(query, k=5, mode="hybrid", fusion="calibrated")
        assert asked.hits[0].score_type == "calibrated"


@needs_models
def test_hybrid_runs_its_vector_side_again_from_the_fused_first_pass(
    built: dict[str, Path],
) -> None:
    """A build records Rocchio feedback (5 chunks, weight 0.3): the vector side of a hybrid
    query is the exact search for the query moved toward the first pass's 5 best fused
    chunks. The first pass is what a file without feedback answers."""
    query = "how is a citation checked against its source?"
    k = 5
    with urna.open(built["one-pass"]) as first, urna.open(built["default"]) as corpus:
        assert "feedback" not in first.manifest["fusion"]
        assert corpus.manifest["fusion"]["feedback"] == {
            "method": "rocchio",
            "docs": 5,
            "weight": 0.3,
            "pool": 1,  # ranked among the first pass's candidates: here every chunk
        }
        assert corpus.n_chunks <= default_candidates(k)
        depth = default_candidates(k)
        best = first.search_text(query, k=5, mode="hybrid").hits
        q = np.asarray(corpus.embedder().embed([query])[0], dtype=np.float32)
        q /= np.linalg.norm(q)
        moved = rocchio(q, np.stack([corpus.embedding(h.ordinal) for h in best]), 0.3)
        assert float(moved @ q) < 0.9999  # the query did move
        vector_side = corpus.search(moved.tolist(), k=depth)
        expected = {h.ordinal: (r, h.score) for r, h in enumerate(vector_side.hits, 1)}
        result = corpus.search_text(query, k=k, mode="hybrid")
        assert any("vector" in h.ranks for h in result.hits)
        for hit in result.hits:
            if "vector" in hit.ranks:
                rank, score = expected[hit.ordinal]
                assert hit.ranks["vector"]["rank"] == rank
                assert hit.ranks["vector"]["score"] == pytest.approx(score, abs=1e-6)


def _with_fusion(source: Path, target: Path, fusion: object) -> Path:
    parts = take_apart(source.read_bytes())
    manifest = json.loads(parts.manifest)
    manifest["fusion"] = fusion
    parts.manifest = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode()
    target.write_bytes(put_together(parts))
    return target


@needs_models
@pytest.mark.parametrize(
    ("fusion", "fragment"),
    [
        ({"default": "average", "text_calibration": 10.0, "rrf_k": 60}, "fusion.default 'average'"),
        ({"default": "calibrated", "text_calibration": -1, "rrf_k": 60}, "text_calibration"),
        ({"default": "rrf", "text_calibration": 10.0, "rrf_k": "sixty"}, "rrf_k"),
        ("calibrated", "fusion must be an object"),
        (
            {"default": "calibrated", "text_calibration": 0.5, "rrf_k": 60, "text_scale": "log"},
            "fusion.text_scale 'log'",
        ),
        (
            {"default": "calibrated", "text_calibration": 0.5, "rrf_k": 60, "feedback": 3},
            "fusion.feedback must be an object",
        ),
        (
            {
                "default": "calibrated",
                "text_calibration": 0.5,
                "rrf_k": 60,
                "feedback": {"method": "rm3", "docs": 3, "weight": 0.5},
            },
            "method 'rocchio'",
        ),
        (
            {
                "default": "calibrated",
                "text_calibration": 0.5,
                "rrf_k": 60,
                "feedback": {"method": "rocchio", "docs": 0, "weight": 0.5},
            },
            "fusion.feedback.docs must be > 0",
        ),
        (
            {
                "default": "calibrated",
                "text_calibration": 0.5,
                "rrf_k": 60,
                "feedback": {"method": "rocchio", "docs": 3, "weight": 1e9},
            },
            "at most 100 docs and weight 10",
        ),
    ],
)
def test_an_unknown_recorded_fusion_is_refused(
    built: dict[str, Path], tmp_path: Path, fusion: object, fragment: str
) -> None:
    forged = _with_fusion(built["default"], tmp_path / "forged.urna", fusion)
    with pytest.raises(urna.FormatError, match="fusion") as caught:
        urna.open(forged)
    assert fragment in str(caught.value)


def test_build_refuses_bad_fusion_parameters(tmp_path: Path) -> None:
    with pytest.raises(urna.BuildError, match="rrf_k"):
        urna.build(
            tmp_path / "x.urna",
            [{"text": "a", "source_uri": "a.txt", "byte_start": 0, "byte_end": 1}],
            embeddings=[[1.0, 0.0]],
            model="m",
            model_hash="sha256:" + "0" * 64,
            chunker_version="c/1",
            bm25=True,
            fusion=FusionParams(rrf_k=0),
        )
