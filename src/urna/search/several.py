"""Several corpora searched as one: the shards of every corpus under one search core, so
global BM25 statistics, exact scores and every filter hold across them as they hold across
a collection's shards, and k is right after filtering (never a global top-k filtered by
corpus afterwards). Each hit names its corpus.

Corpora must share their model (the same model_hash, so one query vector scores them all)
and dimension, and those with a BM25 index its tokenizer; corpora that do not are refused,
each named with its model (search them one at a time). Where one has no BM25 index, the
words cannot rank across all of them: text and hybrid modes say so, vector mode answers.
Fusion follows the first corpus's recorded recipe.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from urna.errors import QueryError
from urna.search.core import Searcher
from urna.search.protocol import Searchable
from urna.search.request import Query
from urna.search.result import SearchResult
from urna.search.shard import Shard


def shards_of(corpus: Searchable) -> Sequence[Shard]:
    """A collection's shards, or a file as its own one shard."""
    found: Sequence[Shard] | None = getattr(corpus, "shards", None)
    return found if found is not None else [corpus]  # type: ignore[list-item]


class Several:
    """Named corpora answering as one (``search/several.py``)."""

    def __init__(self, corpora: Mapping[str, Searchable]) -> None:
        if len(corpora) < 2:
            raise QueryError("several corpora: name two or more")
        shards: list[Shard] = []
        self._owner: list[str] = []
        seen: dict[tuple[Any, ...], str] = {}
        tokenizers: dict[str, str] = {}
        for name, corpus in corpora.items():
            parts = list(shards_of(corpus))
            facts = parts[0].facts
            key = (facts.manifest.get("model_hash"), facts.dim)
            if seen and key not in seen:
                first_name, first = next(iter(seen.values())), next(iter(seen))
                raise QueryError(
                    f"corpora {first_name} ({first[0]}, dim {first[1]}) and {name} ({key[0]}, "
                    f"dim {key[1]}) hold vectors of different models: search them one at a time"
                )
            seen.setdefault(key, name)
            if facts.tokenizer is not None:
                tokenizers.setdefault(facts.tokenizer, name)
            if len(tokenizers) > 1:
                a, b = tokenizers.values()
                raise QueryError(
                    f"corpora {a} and {b} read words with different BM25 tokenizers (built by "
                    "different urna versions): rebuild one, or search them one at a time"
                )
            shards.extend(parts)
            self._owner.extend([name] * len(parts))
        self.names = list(corpora)
        self._searcher = Searcher(shards)

    def close(self) -> None:
        """Let go of the search core made for these corpora (their shards stay open: they
        are the corpora's)."""
        self._searcher.close()

    def __enter__(self) -> Several:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def run(self, query: Query) -> SearchResult:
        """The query over every corpus at once, each hit naming its corpus."""
        result = self._searcher.run(query)
        offsets = self._searcher.offsets.tolist()
        hits = [
            replace(h, corpus=self._owner[bisect.bisect_right(offsets, h.ordinal) - 1])
            for h in result.hits
        ]
        return replace(result, hits=hits)
