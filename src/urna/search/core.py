"""The one search core: every path, over N shards. A single file is a collection of one shard.

The core takes a ``Query`` whole (``search/request.py``), checks its filter against the
fields the shards hold, asks each shard (in parallel threads where they pay: numpy, BLAS
and usearch release the GIL; ``search/fanout.py``) and merges in the one order of
``search/order.py``:

- exact vectors: each shard's exact top k, merged by score;
- HNSW, graph and space: each shard's own ranked answer (reranked exactly there), merged;
  HNSW walks each of n > 4 graphs at a smaller ef (``shard_ef``);
- BM25 in two rounds over several shards: each reports its document count, total length and
  the query terms' document frequencies, then every shard scores with the combined
  statistics (as Elasticsearch's dfs_query_then_fetch does), so a collection scores as one
  file; one shard scores with its own stored weights, which are the same numbers;
- hybrid: each method merged, then fused (``search/fusion.py``).

Ordinals are global (shard after shard); hits are made by the shard holding them, one call
per shard (remote shards asked at once). The result carries the query's terms as the
file's tokenizer reads them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from urna.embed.base import Embedder
from urna.embed.gate import check_gate
from urna.embed.registry import resolve_query
from urna.errors import QueryError
from urna.index.bm25 import BM25Index, TextHits
from urna.index.bm25_global import TermStats
from urna.index.mixed import MixedQuery
from urna.index.tokenize import PER_DOCUMENT, query_in, query_tokenizer_for, tokenize_query
from urna.search.complete import filler
from urna.search.facets import check_facets, facets_of, shaped
from urna.search.fanout import Fanout
from urna.search.filters import Filter
from urna.search.grouping import grouped
from urna.search.hits import across
from urna.search.merge import merge_top
from urna.search.pooled import one_exact_pass, one_text_pass, pooled_walk, shard_ef, walked_top
from urna.search.postings import CollectionPostings, CollectionStats
from urna.search.query import GivenVector, prepare
from urna.search.request import Query
from urna.search.result import FUSED_NOTE, RERANK_NOTE, Hit, SearchResult
from urna.search.shard import HitSpec, Pair, Ranking, Shard
from urna.search.syntax import read_query
from urna.search.text import Ranked, has_words, rank, route
from urna.search.typos import Vocabulary, corrected, respelt
from urna.search.words import TextRule

# Up to this many chunks a collection's BM25 scores go into one array, topped once, from
# the collection's postings (``search/postings.py``); above it each shard scores and tops
# its own: one pass over the pooled postings beat shard by shard at 300,000 and 1,000,000
# chunks in 16 shards (``benchmarks/bench_million.py``). The bound keeps the array a query
# allocates at 8 MiB.
POOLED_TEXT_MAX = 1 << 21


class Searcher(Fanout):
    """Runs queries over shards in catalog order (a file: one shard)."""

    def __init__(self, shards: Sequence[Shard], table: BM25Index | None = None) -> None:
        super().__init__(shards)
        first = self.shards[0].facts
        self.model = first.model
        self.manifest, self.fusion = first.manifest, first.fusion
        self.has_text_index = all(s.facts.has_text_index for s in self.shards)
        self.tokenize = query_tokenizer_for(first.tokenizer or "") or tokenize_query
        self.languages = tuple(sorted({x for s in self.shards for x in s.facts.languages}))
        if first.tokenizer == PER_DOCUMENT:  # each chunk in its own language
            self.tokenize = MixedQuery(self.languages or ("en",))
        self._schema: dict[str, dict[str, int]] | None = None
        self.live = sum(s.facts.live for s in self.shards)  # less the catalog's deletions
        self.deletions = self.live != int(self.offsets[-1])
        self.postings = CollectionPostings(self.shards, self.offsets, table)
        self.stats = CollectionStats(self._ask_stats, self.postings)  # fixed for its life
        self._vocabulary: Vocabulary | bool | None = None  # for typos, made on first need

    @property
    def n_chunks(self) -> int:
        """Chunks that count (a collection's deleted chunks do not)."""
        return self.live

    def close(self) -> None:
        self.postings.close()
        super().close()

    # --- filters -------------------------------------------------------------

    def schema(self) -> dict[str, dict[str, int]]:
        """Every field the shards hold, with the chunks holding each of its types."""
        if self._schema is None:
            merged: dict[str, dict[str, int]] = {}
            for part in self.each(lambda s: s.schema()):
                for name, kinds in part.items():
                    into = merged.setdefault(name, {})
                    for kind, count in kinds.items():
                        into[kind] = into.get(kind, 0) + count
            self._schema = dict(sorted(merged.items()))
        return self._schema

    def kept(self, query: Query, rule: TextRule | None = None) -> Filter | None:
        kept = query.kept()
        if kept is not None:
            kept.check(self.schema())
        if rule is not None:
            kept = replace(kept or Filter(), text=rule)
        return kept

    # --- running a query -------------------------------------------------------

    def run(self, query: Query) -> SearchResult:
        if query.group is not None:
            return grouped(query, self.run, self.live)
        k = query.k
        facts = self.shards[0].facts
        query, rule = read_query(query, self.schema(), facts.tokenizer, self.languages)
        kept = self.kept(query, rule)
        counted = kept is not None or self.deletions
        searched = sum(self.each(lambda s: s.count(kept), threads=False)) if counted else self.live
        if query.method == "text":
            return self._text(query, k, kept, searched)
        ef, hops = query.ef, query.hops
        if query.method == "space":
            return self._space(query, k, kept, searched)
        t0 = time.perf_counter()
        assert query.vector is not None  # Query refuses a vector method without one
        q = prepare(query.vector, self.dim)
        if searched == 0:
            return self._nothing_kept("exact", k, t0)
        if query.method == "exact":
            idx, scores = self.vector_top(q, k, kept)
            hits = self.make_hits(idx, scores, HitSpec("exact"))
            return SearchResult("exact", 1.0, k, searched, _ms(t0), hits)
        if query.method == "ann":
            each_ef = shard_ef(ef, k, len(self.shards))
            pooled = pooled_walk(self, q, k, ef, each_ef, kept)
            if pooled is not None:  # already over global ordinals, ranked
                return self._ranked([pooled], k, searched, t0)
            parts = self.each(lambda s: s.ann_top(q, k, each_ef, kept))
        else:
            parts = self.each(lambda s: s.graph_top(q, k, hops, ef, kept))
        return self._ranked(parts, k, searched, t0)

    def _space(self, query: Query, k: int, kept: Filter | None, searched: int) -> SearchResult:
        t0 = time.perf_counter()
        space = str(query.space)
        vector = np.asarray(query.vector)
        if searched == 0:
            return replace(self._nothing_kept("space", k, t0), space=space)
        expect = query.expect_model_hash
        parts = self.each(lambda s: s.space_top(vector, space, k, expect, kept))
        return replace(self._ranked(parts, k, searched, t0), space=space)

    def _ranked(self, parts: list[Ranking], k: int, searched: int, t0: float) -> SearchResult:
        """Each shard's own ranked answer, merged (one part: the answer, its ordinals
        global); exact when every shard ran exact."""
        ran = [p for p in parts if p.index_type != "exact"] or parts
        index_type, precision, model = ran[0].index_type, ran[0].precision, ran[0].model
        reranked = index_type in ("hnsw", "graph")
        if len(parts) == 1:
            idx, scores = parts[0].ordinals, parts[0].scores
        else:
            idx, scores = merge_top(
                [(p.ordinals + self.offsets[s], p.scores) for s, p in enumerate(parts)],
                k,
                self.source_uris,
            )
        spec = HitSpec(index_type, reranked=reranked, precision=precision, model=model)
        hits = self.make_hits(idx, scores, spec)
        exact = index_type in ("exact", "space")
        note = None if exact else RERANK_NOTE
        return SearchResult(
            index_type, 1.0 if exact else None, k, searched, _ms(t0), hits, recall_note=note
        )

    def _nothing_kept(self, index_type: str, k: int, t0: float) -> SearchResult:
        note = f"the filter keeps 0 of {self.n_chunks} chunks"
        return SearchResult(index_type, 1.0, k, 0, _ms(t0), [], note=note)

    # --- text ----------------------------------------------------------------

    def embedder(self, model_path: str | os.PathLike[str] | None = None) -> Embedder:
        """The corpus's own model (loaded once per process), after the model gate."""
        found = resolve_query(self.model, model_path=model_path, download=False)
        check_gate(found, self.manifest)
        return found

    def _text(self, query: Query, k: int, kept: Filter | None, searched: int) -> SearchResult:
        text = query.text
        if not isinstance(text, str) or not text.strip():
            raise QueryError("empty query")
        if not has_words(text):  # "?!...": nothing for either method to go on
            raise QueryError(f"empty query: {text.strip()[:40]!r} has no letters or digits")
        fusion = self.fusion.choose(query.fusion)
        check_facets(query.facets, self.schema())
        given = query.embedder
        if query.vector is not None:  # the caller embedded the query: no model here
            given = GivenVector(query.vector, str(self.manifest.get("model_hash")), self.dim)

        def gated() -> Embedder:
            if given is None:
                return self.embedder(query.model_path)
            if not isinstance(given, GivenVector):  # a caller's vector is its own word
                check_gate(given, self.manifest)
            return given

        explicit = given is not None or query.model_path is not None
        chosen = route(query.mode, has_bm25=self.has_text_index, embedder=gated, explicit=explicit)
        if chosen.embedder is not None:
            chosen.embedder.load()  # query_time covers embedding the query, not loading the model
        t0 = time.perf_counter()
        terms, read_as, embedded = self._terms(query, kept, chosen.mode)
        index_type = "exact" if chosen.mode == "vector" else chosen.mode
        # Local BM25 is asked shard after shard: threads lost at 16 shards of 62,500 chunks (1.17x
        # against 1.03x one file, bench_million.py) and contend with BLAS's in a hybrid query.
        alone = self.remote
        if searched == 0:
            result = self._nothing_kept(index_type, k, t0)
            return replace(result, mode=chosen.mode, terms=terms)
        ranked = rank(
            text,
            k,
            route=chosen,
            dim=self.dim,
            vector_top=(lambda q, depth: self.vector_top(q, depth, kept))
            if query.vector_index == "exact"
            else (lambda q, depth: walked_top(self, q, depth, max(query.ef, depth), kept)),
            text_top=(lambda _, depth: self.text_top(terms, depth, kept, alone))
            if self.has_text_index
            else None,
            fusion=fusion,
            params=self.fusion,
            candidates=query.candidates,
            source_of=self.source_uris,
            vectors=self.embeddings,
            fill=filler(self, terms),
            pool=bool(query.facets),
            respelt=embedded,
        )
        spec = HitSpec(index_type, ranked.score_type, terms=terms, ranks=ranked.ranks)
        hits = self.make_hits(ranked.ordinals, ranked.scores, spec)
        exact = chosen.mode != "hybrid"  # vector and text score every chunk; fusion ranks
        return SearchResult(
            index_type,
            1.0 if exact else None,
            k,
            searched,
            _ms(t0),
            hits,
            mode=chosen.mode,
            candidates=ranked.candidates,
            note="; ".join(n for n in (chosen.note, read_as, _walked(query, chosen.mode)) if n),
            recall_note=None if exact else FUSED_NOTE,
            terms=terms,
            facets=self._facets(tuple(query.facets), ranked, terms, kept) if query.facets else None,
        )

    def _terms(self, query: Query, kept: Filter | None, mode: str) -> tuple[list[str], str, str]:
        """The query's BM25 terms, typos read as the nearest vocabulary word (``typos.py``),
        what was read so ("" when nothing was), and the text the model embeds (in hybrid
        mode, the typos respelt as the corpus's words)."""
        text = str(query.text)
        read, reading = self.tokenize, ""
        if isinstance(self.tokenize, MixedQuery):  # each document in its own language
            asked = query.lang
            read = query_in(asked) if asked else read
            reading = f"words read as {asked}" if asked else self.tokenize.note(text)
        terms = read(text)
        if not query.typos or mode == "vector":
            return terms, reading, text
        if self._vocabulary is None:
            self._vocabulary = Vocabulary.of(self.shards) or False
        vocabulary = self._vocabulary
        if not isinstance(vocabulary, Vocabulary):
            return terms, reading, text
        rule = kept.text if kept is not None else None
        exact = rule.tokens() if rule else set()
        terms, fixes = corrected(text, terms, vocabulary, read, exact)
        fixed = ", ".join(f"{a} as {b}" for a, b in fixes.items())
        embedded = respelt(text, fixes, vocabulary, read) if mode == "hybrid" else text
        notes = (reading, f"typos read: {fixed}" if fixed else "")
        return terms, "; ".join(n for n in notes if n), embedded

    def _facets(
        self, names: tuple[str, ...], ranked: Ranked, terms: list[str], kept: Filter | None
    ) -> dict[str, Any]:
        """Value counts over every matching chunk (text), or the candidate pool."""
        if ranked.pool is None:
            matching = self.text_top(terms, self.live, kept, self.remote).ordinals
            over = "every matching chunk"
        else:
            matching, over = ranked.pool, "the ranked candidate pool"
        counts = facets_of(
            names, matching, self.offsets, lambda s, n, at: self.shards[s].facet_counts(n, at)
        )
        return shaped(counts, names, over, len(matching))

    # --- each method's candidates, merged ----------------------------------------

    def vector_top(self, q: np.ndarray, depth: int, kept: Filter | None) -> Pair:
        if len(self.shards) > 1 and not self.remote:
            found = one_exact_pass(self, q, depth, kept)
            if found is not None:
                return found
        # A local exact scan is BLAS's, on every core already: threads only add contention.
        parts = self.each(lambda s: s.vector_top(q, depth, kept), threads=self.remote)
        if len(parts) == 1:
            return parts[0]
        return merge_top(self._global(parts), depth, self.source_uris)

    def text_top(
        self, tokens: list[str], depth: int, kept: Filter | None, threads: bool = True
    ) -> TextHits:
        stats = self.stats.of(tokens, threads)
        shared = stats if len(self.shards) > 1 else None  # one shard: its own weights
        found = None
        if shared is not None and not self.remote and self.n_chunks <= POOLED_TEXT_MAX:
            found = one_text_pass(self, tokens, shared, depth, kept)
        if found is not None:
            idx, scores = found
        else:
            parts = self.each(lambda s: s.text_top(tokens, shared, depth, kept), threads=threads)
            if len(parts) == 1:
                idx, scores = parts[0]
            else:
                idx, scores = merge_top(self._global(parts), depth, self.source_uris)
        return TextHits(idx, scores, tokens, stats.idf_sum(tokens))

    def _ask_stats(self, tokens: list[str], threads: bool) -> TermStats:
        return TermStats.combine(self.each(lambda s: s.term_stats(tokens), threads=threads))

    def _global(self, parts: Sequence[Pair]) -> list[Pair]:
        return [(idx + self.offsets[s], scores) for s, (idx, scores) in enumerate(parts)]

    # --- hits and sources --------------------------------------------------------

    def make_hits(self, idx: np.ndarray, scores: np.ndarray, spec: HitSpec) -> list[Hit]:
        """Hits in rank order; each made by its shard (one call per shard holding any)."""
        idx = np.asarray(idx, dtype=np.int64)
        if len(self.shards) == 1:
            return self.shards[0].make_hits(idx, scores, spec)
        makers = [getattr(s, "hit_maker", None) for s in self.shards]
        if spec.at is None and all(m is not None for m in makers):  # local: one pass
            return across(makers, self.offsets, idx, np.asarray(scores), spec)  # type: ignore[arg-type]
        scores = np.asarray(scores)

        def made(s: int, rows: np.ndarray, at: np.ndarray) -> list[Hit]:
            part = spec.part(at.tolist(), int(self.offsets[s]))
            return self.shards[s].make_hits(rows, scores[at], part)

        out: list[Hit | None] = [None] * len(idx)
        for at, hits in self.by_owner(idx, made):
            for j, hit in zip(at.tolist(), hits, strict=True):
                out[j] = hit
        return [h for h in out if h is not None]


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def _walked(query: Query, mode: str) -> str:
    """The note of a hybrid whose vector side walked HNSW instead of scanning."""
    if query.vector_index != "ann" or mode != "hybrid":
        return ""
    return f"vector side by HNSW (ef {query.ef}): approximate, see urna benchmark's recall"
