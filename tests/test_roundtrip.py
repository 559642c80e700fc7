"""Round trip: whatever urna.build writes, urna.open reads back the same."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import urna
from urna.format.identity import chunk_id

TOLERANCE = {"float32": 1e-7, "float16": 1e-3, "int8": 1 / 127 + 1e-6}

texts = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)


@st.composite
def corpora(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 12))
    dim = draw(st.integers(1, 24))
    chunks = []
    seen = set()
    for _ in range(n):
        while True:
            text = draw(texts)
            uri = draw(st.sampled_from(["a.md", "docs/b.txt", "файл.txt", "x y/z.md"]))
            start = draw(st.integers(0, 2**40))
            end = start + draw(st.integers(0, 2**20))
            if (text, uri, start, end) not in seen:
                seen.add((text, uri, start, end))
                break
        chunks.append({"text": text, "source_uri": uri, "byte_start": start, "byte_end": end})
    vectors = draw(
        st.lists(
            st.lists(
                st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=dim, max_size=dim
            ).filter(lambda v: any(abs(x) > 1e-3 for x in v)),
            min_size=n,
            max_size=n,
        )
    )
    return chunks, np.array(vectors, dtype=np.float64)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    corpus=corpora(),
    dtype=st.sampled_from(["float32", "float16", "int8"]),
    compression=st.sampled_from([None, "zstd"]),
)
def test_what_is_written_reads_back(corpus, dtype, compression) -> None:  # type: ignore[no-untyped-def]
    chunks, vectors = corpus
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rt.urna"

        def write() -> urna.BuildResult:
            return urna.build(
                path,
                chunks,
                embeddings=vectors,
                model="m",
                chunker_version="c/1",
                model_hash="sha256:" + "ab" * 32,
                dtype=dtype,
                compression=compression,
            )

        built = write()
        first = path.read_bytes()
        write()
        assert path.read_bytes() == first  # reproducible
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        with urna.open(path) as c:
            assert c.n_chunks == len(chunks) and c.dim == vectors.shape[1] and c.dtype == dtype
            assert c.content_hash == built.content_hash and c.file_hash == built.file_hash
            for i, want in enumerate(chunks):
                got = c.chunk(i)
                assert got.text == want["text"]
                assert got.source_uri == want["source_uri"]
                assert (got.byte_start, got.byte_end) == (want["byte_start"], want["byte_end"])
                assert got.chunk_id == chunk_id(
                    want["text"], want["source_uri"], want["byte_start"], want["byte_end"], "c/1"
                )
                assert c.find(got.chunk_id) == i
                assert np.allclose(c.embedding(i), unit[i], atol=TOLERANCE[dtype] * 1.01)
            c.validate()
            if compression:
                assert {s.encoding for s in c.sections() if s.id != 4} == {"zstd"}
