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

import threading
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

from urna import library
from urna.errors import QueryError
from urna.search.opening import open_path
from urna.search.protocol import Searchable
from urna.search.request import query_from
from urna.search.result import Hit
from urna.search.text import MODES


def document(hit: Hit) -> Document:
    """A hit as a LangChain ``Document``: the text, and everything to cite and check it."""
    return Document(
        id=hit.citation_id,
        page_content=hit.text,
        metadata={
            "citation_id": hit.citation_id,
            "source": hit.source_uri,
            "byte_start": hit.byte_start,
            "byte_end": hit.byte_end,
            "section_path": hit.section_path,
            "page": hit.page,
            "chunk_id": hit.chunk_id,
            "content_hash": hit.content_hash,
            "file_hash": hit.file_hash,
            "rank": hit.rank,
            "score": hit.score,
            "score_type": hit.score_type,
            "ranks": hit.ranks,
            "model": hit.model,
            "fields": hit.metadata,  # the chunk's own metadata (front matter, record fields)
        },
    )


SETTINGS = ("k", "mode", "fusion", "source", "section", "where")  # the Query parts it sets


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

    _corpus: Searchable | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @model_validator(mode="after")
    def _one_target(self) -> UrnaRetriever:
        if (self.path is None) == (self.corpus_name is None):
            raise ValueError("give exactly one of path (a .urna file or folder) or corpus_name")
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        return self

    @property
    def corpus(self) -> Searchable:
        """The opened corpus (opened, with every check, on first use)."""
        with self._lock:
            if self._corpus is None:
                name = str(self.corpus_name)
                self._corpus = open_path(library.resolve(name) if self.path is None else self.path)
            return self._corpus

    def close(self) -> None:
        with self._lock:
            if self._corpus is not None:
                self._corpus.close()
                self._corpus = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        unknown = set(overrides) - set(SETTINGS)
        if unknown:
            raise QueryError(f"unknown retriever arguments: {', '.join(sorted(unknown))}")
        settings = {name: getattr(self, name) for name in SETTINGS} | overrides
        result = self.corpus.run(query_from(text=query, **settings))
        return [document(h) for h in result.hits]
