"""The embedded-context recipe: what a chunk's vector embeds, and what it leaves alone."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import needs_models, run
from urna.build.spec import BuildSpec, Source
from urna.build.writer import build_file
from urna.embed.registry import resolve
from urna.ingest.context import CONTEXT_RECIPE, NO_CONTEXT, embedded_texts, lead


@dataclass(frozen=True)
class C:
    text: str
    section_path: str
    source_uri: str
    source_ordinal: int


def test_the_recipe_adds_what_the_chunk_lacks() -> None:
    chunks = [
        C("Whale songs\n\nHumpback whales sing.", "Whale songs", "r.jsonl#1", 1),
        C("The songs change every year.", "Whale songs", "r.jsonl#1", 2),
        C("# Guide\n\nIntro.", "Guide", "g.md", 1),
        C("## Install\n\nRun pip.", "Guide / Install", "g.md", 2),
        C("# Guide\n\n## Setup\n\nFirst steps.", "Guide / Setup", "h.md", 1),
        C("statin breast cancer survival nationwide cohort study finland abstract x", "", "n#7", 1),
        C("later part of the abstract", "", "n#7", 2),
    ]
    texts = embedded_texts(chunks)
    assert texts[0] == chunks[0].text  # a record's first chunk starts with its title
    assert texts[1] == "Whale songs\n\nThe songs change every year."
    assert texts[2] == chunks[2].text  # "# Guide" is the path's top, markup aside
    assert texts[3] == "Guide / Install\n\n## Install\n\nRun pip."
    assert texts[4] == chunks[4].text  # it starts with its top heading and holds the rest
    assert texts[5] == chunks[5].text
    assert texts[6] == (
        "statin breast cancer survival nationwide cohort study finland abstract x\n\n"
        "later part of the abstract"
    )
    assert lead(" \n" + " ".join(f"w{i}" for i in range(40))) == " ".join(
        f"w{i}" for i in range(16)
    )
    assert embedded_texts(chunks, NO_CONTEXT) == [c.text for c in chunks]
    with pytest.raises(ValueError, match="unknown context recipe"):
        embedded_texts(chunks, "urna-context/9")


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    body = " ".join(f"Humpback whales repeat phrase {i} across the ocean basin." for i in range(60))
    other = " ".join(f"Member {i} was followed for statin use and survival." for i in range(60))
    records = [
        {"_id": "1", "title": "Whale song evolution", "text": body},
        {"_id": "2", "title": "", "text": "statin breast cancer survival finland. " + other},
    ]
    (docs / "records.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    section = " ".join(f"Step {i}: install the package and check the citation." for i in range(50))
    (docs / "guide.md").write_text(f"# Guide\n\n## Install\n\n{section}\n")
    return docs


@needs_models
def test_a_build_embeds_chunks_in_context_and_stores_them_as_they_are(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    out = tmp_path / "c.urna"
    embedder = resolve("minilm")
    build_file(BuildSpec(sources=(Source(docs),), output=out, base=docs, model="minilm"))
    with urna.open(out) as corpus:
        assert corpus.manifest["embed_context"] == CONTEXT_RECIPE
        chunks = [corpus.chunk(i) for i in range(corpus.n_chunks)]
        later = [c for c in chunks if c.source_ordinal > 1]
        assert len(later) >= 3  # every source has chunks past its first
        # Stored text is exactly the source's bytes at the span; the citation verifies.
        for chunk in chunks:
            corpus.verify_source(chunk, docs)
        # The vectors are those of the embedded (contextual) texts.
        texts = embedded_texts(chunks)
        assert sum(t != c.text for t, c in zip(texts, chunks, strict=True)) == len(later)
        want = embedder.embed(texts)
        got = np.vstack([corpus.embedding(i) for i in range(corpus.n_chunks)])
        assert np.allclose(got, want, atol=1e-5)
        alone = embedder.embed([c.text for c in later])
        assert not np.allclose(got[[c.ordinal for c in later]], alone, atol=1e-3)
        # BM25 indexes the same texts: a later chunk is found by its document's title.
        title_hits = corpus.search_text("whale song evolution", k=20, mode="text").hits
        assert {h.source_ordinal for h in title_hits if "#1" in h.source_uri} >= {1, 2}
    # Chunk ids do not depend on the recipe: the same chunks written without one match.
    plain = tmp_path / "plain.urna"
    with urna.open(out) as corpus:
        result = urna.build(
            plain,
            [
                {
                    "text": c.text,
                    "source_uri": c.source_uri,
                    "byte_start": c.byte_start,
                    "byte_end": c.byte_end,
                }
                for c in chunks
            ],
            embeddings=embedder.embed([c.text for c in chunks]),
            model=corpus.model,
            model_hash=corpus.model_hash,
            chunker_version=corpus.manifest["chunker_version"],
        )
        assert result.chunk_ids == [corpus.chunk_id(i) for i in range(corpus.n_chunks)]
    with urna.open(plain) as corpus:
        assert "embed_context" not in corpus.manifest
    inspected = json.loads(run("inspect", str(out), "--json").stdout)
    assert inspected["manifest"]["embed_context"] == CONTEXT_RECIPE
