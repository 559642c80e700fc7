"""A LlamaIndex retriever over a .urna file, a collection or a library corpus.

>>> from urna.integrations.llama_index import UrnaRetriever
>>> retriever = UrnaRetriever(path="notes.urna", k=4)      # or UrnaRetriever(corpus_name="notes")
>>> nodes = retriever.retrieve("how do I install it?")   # list[NodeWithScore]
>>> nodes[0].node.metadata["citation_id"]                # urna://<content_hash>/<chunk_id>

It takes the LangChain retriever's arguments (``path`` or ``corpus_name``, ``k``, ``mode``,
``fusion``, ``source``, ``section``, ``where``). Each node is a ``TextNode`` with the
chunk's text, its citation as its id, and metadata carrying the citation, the source and
byte span, the section path, the chunk's own metadata and the scores (each method's score
and rank on a fused hit); the node's score is the hit's. Only the citation, source and
section path are shown to an LLM or an embedder with the text. Needs the extra:
``pip install 'urna[llama-index]'``.
"""

from __future__ import annotations

from typing import Any

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "urna's LlamaIndex retriever needs its extra: pip install 'urna[llama-index]'"
    ) from exc

from urna.integrations.shared import Target, check_settings, hit_metadata, hits
from urna.search.protocol import Searchable
from urna.search.result import Hit

SHOWN = ("citation_id", "source", "section_path")  # what an LLM or embedder sees besides text


def node(hit: Hit) -> NodeWithScore:
    """A hit as a scored LlamaIndex ``TextNode``: the text, and everything to cite it."""
    metadata = hit_metadata(hit)
    hidden = [key for key in metadata if key not in SHOWN]
    text = TextNode(
        id_=hit.citation_id,
        text=hit.text,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=hidden,
    )
    return NodeWithScore(node=text, score=hit.score)


class UrnaRetriever(BaseRetriever):
    """Retrieves chunks from ``path`` (a .urna file or collection folder) or from the corpus
    ``corpus_name`` of the library, with the file's own model, BM25, or both fused (``mode``)."""

    def __init__(
        self,
        path: str | None = None,
        corpus_name: str | None = None,
        *,
        k: int = 4,
        mode: str = "auto",
        fusion: str | None = None,
        source: str | None = None,
        section: str | None = None,
        where: dict[str, Any] | None = None,
        **base: Any,
    ) -> None:
        check_settings(path, corpus_name, k, mode)
        self.path, self.corpus_name = path, corpus_name
        self.k, self.mode, self.fusion = k, mode, fusion
        self.source, self.section, self.where = source, section, where
        self._target = Target(path, corpus_name)
        super().__init__(**base)

    @property
    def corpus(self) -> Searchable:
        """The opened corpus (opened, with every check, on first use)."""
        return self._target.corpus

    def close(self) -> None:
        self._target.close()

    def search(self, query: str, **overrides: Any) -> list[NodeWithScore]:
        """One query with some settings overridden for this call (``k=1``, ``mode=...``)."""
        return [node(h) for h in hits(self, self._target, query, overrides)]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.search(query_bundle.query_str)
