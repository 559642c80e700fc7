"""Several corpora searched as one: the shards of every corpus under one search core, so
global BM25 statistics, exact scores and every filter hold across them as they hold across
a collection's shards, and k is right after filtering (never a global top-k filtered by
corpus afterwards). Each hit names its corpus.

Corpora of one model (the same model_hash and dimension, so one query vector scores them
all) and one BM25 reading (tokenizer) are one search core. Corpora of different models or
readings (another ``--lang``) are searched each by its own (a group of corpora per model
and reading, each group one search core) and the groups' answers fused by
calibrated confidence, as hybrid fuses its two methods (``search/fusion.py``): a cosine
clamped to [0, 1], a calibrated hybrid score as it is (it is already that confidence), a
BM25 score as s / (s + C); the result says so. Each group is asked for k after every
filter, so the fused k is right. Text mode needs no model, so over corpora of one reading
it stays one search core (global BM25 statistics), whatever their models; over several
readings each reads the query in its own language (a German corpus and an English one,
``-l notes-de,docs``). A query vector fits one model, so vector methods (exact, ann,
graph, space) refuse corpora of several. Where one corpus has no BM25 index, the words
cannot rank across all of them: text and hybrid modes say so, vector mode answers.
Fusion follows the first corpus's recorded recipe.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from urna.errors import QueryError
from urna.format.fusion import TEXT_CALIBRATION
from urna.index.tokenize import language_of
from urna.search.core import Searcher
from urna.search.fusion import confidence
from urna.search.grouping import grouped
from urna.search.protocol import Searchable
from urna.search.request import Query
from urna.search.result import FUSED_NOTE, Hit, SearchResult
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
        models: dict[tuple[Any, ...], list[int]] = {}  # (model_hash, dim) -> shard positions
        tokenizers: dict[str, str] = {}
        for name, corpus in corpora.items():
            parts = list(shards_of(corpus))
            facts = parts[0].facts
            key = (facts.manifest.get("model_hash"), facts.dim, facts.tokenizer)
            if facts.tokenizer is not None:
                tokenizers.setdefault(facts.tokenizer, name)
            models.setdefault(key, []).extend(range(len(shards), len(shards) + len(parts)))
            shards.extend(parts)
            self._owner.extend([name] * len(parts))
        self.names = list(corpora)
        self._one_reading = len(tokenizers) <= 1  # one BM25 over all: text mode is one core
        self._searcher = Searcher(shards)
        self._groups: list[tuple[Searcher, list[int]]] = []
        if len(models) > 1:  # a search core per model, its shards' places among all
            self._groups = [(Searcher([shards[i] for i in at]), at) for at in models.values()]
        self._one_model = len({key[:2] for key in models}) == 1  # one query vector for all
        self._models = [
            f"{self._owner[at[0]]}: {shards[at[0]].facts.model}, "
            f"words in {_reading(language_of(shards[at[0]].facts.tokenizer))}"
            for at in models.values()
        ]

    def close(self) -> None:
        """Let go of the search cores made for these corpora (their shards stay open: they
        are the corpora's)."""
        self._searcher.close()
        for searcher, _ in self._groups:
            searcher.close()

    def __enter__(self) -> Several:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def run(self, query: Query) -> SearchResult:
        """The query over every corpus at once, each hit naming its corpus."""
        text_only = query.method == "text" and query.mode == "text"
        vector_only = query.method != "text" or query.mode == "vector"
        if (
            not self._groups
            or (text_only and self._one_reading)
            or (vector_only and self._one_model)
        ):
            return self._named(self._searcher.run(query))
        if query.method != "text":
            raise QueryError(
                "a query vector fits one model, and these corpora hold several ("
                + "; ".join(self._models)
                + "): search them one at a time, or by text"
            )
        if query.group is not None:
            return grouped(query, self._across, self._searcher.live)
        return self._across(query)

    def _named(self, result: SearchResult) -> SearchResult:
        offsets = self._searcher.offsets.tolist()
        hits = [
            replace(h, corpus=self._owner[bisect.bisect_right(offsets, h.ordinal) - 1])
            for h in result.hits
        ]
        return replace(result, hits=hits)

    def _across(self, query: Query) -> SearchResult:
        """Each model's corpora asked for k, their hits fused by calibrated confidence
        (best first; ties in corpus order, then each group's own order)."""
        t0 = time.perf_counter()
        fusion = self._searcher.fusion.choose(query.fusion)
        given = query.embedder
        results, hits = [], []
        for searcher, at in self._groups:
            mine = given if given is not None and _fits(given, searcher) else None
            result = searcher.run(replace(query, fusion=fusion, embedder=mine))
            results.append(result)
            global_at = self._searcher.offsets[at]
            for h in result.hits:
                s = bisect.bisect_right(searcher.offsets.tolist(), h.ordinal) - 1
                ordinal = int(global_at[s] + h.ordinal - searcher.offsets[s])
                hits.append((_confidence(h, searcher), ordinal, h))
        hits.sort(key=lambda t: (-t[0], t[1]))
        fused = [
            replace(h, rank=n, ordinal=o, score=c, corpus=self._owner[_shard(self, o)])
            for n, (c, o, h) in enumerate(hits[: query.k], 1)
        ]
        modes = {r.mode for r in results}
        note = (
            "corpora of different models or readings (" + "; ".join(self._models) + ") "
            "searched each by its own, fused by calibrated confidence"
        )
        return SearchResult(
            "hybrid" if "hybrid" in modes else results[0].index_type,
            None,
            query.k,
            sum(r.n_searched for r in results),
            (time.perf_counter() - t0) * 1000,
            fused,
            mode=modes.pop() if len(modes) == 1 else "hybrid",
            candidates=_summed([r.candidates for r in results]),
            note="; ".join(n for n in (*(r.note for r in results), note) if n),
            recall_note=FUSED_NOTE,
            terms=list(dict.fromkeys(t for r in results for t in r.terms)),
            facets=_facets([r.facets for r in results]),
        )


def _fits(embedder: Any, searcher: Searcher) -> bool:
    return getattr(embedder, "model_hash", None) == searcher.manifest.get("model_hash")


def _reading(lang: str) -> str:
    return "each document's language" if lang == "auto" else lang


def _shard(several: Several, ordinal: int) -> int:
    return bisect.bisect_right(several._searcher.offsets.tolist(), ordinal) - 1


def _confidence(hit: Hit, searcher: Searcher) -> float:
    """A hit's score as a 0..1 confidence: hybrid's calibrated (or RRF) score as it is, a
    cosine clamped, a BM25 score (a group answering by words alone, its model missing) over
    the recorded fixed C, or SEARCH.md's C where the recorded one scales with the query."""
    if hit.score_type == "cosine":
        return confidence("vector", hit.score, floor=searcher.fusion.vector_floor)
    if hit.score_type == "bm25":
        fixed = searcher.fusion.text_scale == "fixed"
        return confidence(
            "text", hit.score, searcher.fusion.text_calibration if fixed else TEXT_CALIBRATION
        )
    return hit.score


def _summed(parts: Sequence[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for name, n in part.items():
            out[name] = out.get(name, 0) + n
    return out


def _facets(parts: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Each group's facet counts, summed value by value (each group's most frequent)."""
    found = [p for p in parts if p is not None]
    if not found:
        return None
    fields: dict[str, dict[str, Any]] = {}
    for part in found:
        for name, values in part["fields"].items():
            into = fields.setdefault(name, {})
            for v in values:
                key = repr(v["value"])
                into.setdefault(key, {"value": v["value"], "count": 0})["count"] += v["count"]
    return {
        "over": found[0]["over"],
        "chunks": sum(p["chunks"] for p in found),
        "fields": {
            name: sorted(values.values(), key=lambda v: -v["count"])
            for name, values in fields.items()
        },
    }
