"""A LangChain retriever over a .urna file, a collection or a library corpus.

>>> from urna.integrations.langchain import UrnaRetriever
>>> retriever = UrnaRetriever(path="notes.urna", k=4)      # or UrnaRetriever(corpus_name="notes")
>>> docs = retriever.invoke("how do I install it?")       # list[Document]
>>> docs[0].metadata["citation_id"]                       # urna://<content_hash>/<chunk_id>

Each ``Document`` holds the chunk's text; its metadata carries the citation, the source and
byte span, the section path, and the scores (with each method's score and rank on a fused
hit). ``invoke(query, k=..., mode=..., source=..., section=...)`` overrides a setting for one
call. Needs the extra: ``pip install 'urna[langchain]'``.
"""

from __future__ import annotations

from typing import Any

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "urna's LangChain retriever needs its extra: pip install 'urna[langchain]'"
    ) from exc
from pydantic import PrivateAttr, model_validator

from urna.integrations.shared import Target, check_settings, hit_metadata, hits
from urna.search.protocol import Searchable
from urna.search.result import Hit


def document(hit: Hit) -> Document:
    """A hit as a LangChain ``Document``: the text, and everything to cite and check it."""
    return Document(id=hit.citation_id, page_content=hit.text, metadata=hit_metadata(hit))


class UrnaRetriever(BaseRetriever):
    """Retrieves chunks from ``path`` (a .urna file or collection folder) or from the corpus
    ``corpus_name`` of the library, with the file's own model, BM25, or both fused (``mode``)."""

    path: str | None = None
    corpus_name: str | None = None  # a corpus of the library (URNA_HOME)
    k: int = 4
    mode: str = "auto"
    fusion: str | None = None
    source: str | None = None
    section: str | None = None
    where: dict[str, Any] | None = None  # a where-filter on metadata

    _target: Target = PrivateAttr()

    @model_validator(mode="after")
    def _one_target(self) -> UrnaRetriever:
        check_settings(self.path, self.corpus_name, self.k, self.mode)
        self._target = Target(self.path, self.corpus_name)
        return self

    @property
    def corpus(self) -> Searchable:
        """The opened corpus (opened, with every check, on first use)."""
        return self._target.corpus

    def close(self) -> None:
        self._target.close()

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        return [document(h) for h in hits(self, self._target, query, overrides)]
