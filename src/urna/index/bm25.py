"""BM25 over the chunks (text and section path), stored in section 0x08 and scored from the map.

Scoring is Okapi BM25 in its Lucene form, the same as bm25s's default:
idf = ln(1 + (N - df + 0.5) / (df + 0.5)), and a posting weighs
idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)). Weights are computed at build
time, so a query is a sum of stored weights over its terms, a term the query
repeats counting once per occurrence (as Lucene's and bm25s's queries do).

**A chunk in its context** (payload version 2, what builds write now): a chunk is
indexed with its neighbours in the same source (the chunks just before and after it)
as a second field of weight 1/m (m = 2): a term's frequency is tf(chunk) +
(tf(previous) + tf(next)) / m, and so is the length. A passage is judged with the
text around it, as BM25F weighs a document's fields; ranked by its best chunk, a
document whose words fall on both sides of a chunk boundary is no longer cut in two.
scifact train +0.020 nDCG@10 (chunks alone 0.686 -> in context 0.706; bm25s over
whole documents 0.696), cranfield +0.008, chosen there with m = 2 (m = 4 ties and is
listed after it; ``benchmarks/tune_quality.py``).
Frequencies and lengths are stored in units of 1/m, so they stay integers.

Payload, after the 12-byte prefix (u32 version, u64 count = terms): u64 n_docs,
f32 k1, f32 b, f32 avgdl, u32 m (version 1: 0, no context; version 2: m >= 1), then
the tokenizer name (u32 length + UTF-8), the vocabulary (count strings, u32 length +
UTF-8, sorted by bytes, unique), zero padding to a multiple of 8, u64
indptr[count + 1], u32 doc_ids[nnz] (increasing within a term), f32 weights[nnz],
u32 doc_len[n_docs] (in units of 1/m under version 2).
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from urna.errors import FormatError
from urna.format.layout import SectionId, section_label
from urna.format.reader import Container
from urna.format.sections import U32, StringTable
from urna.index.tokenize import (
    TOKENIZERS,
    Tokenizer,
    query_tokenizer_for,
)
from urna.index.topk import kth_largest, top_k

K1 = 1.5  # bm25s's default; files built before 2026-12 record 1.2, and are scored with it
B = 0.75
VERSION = 2
VERSIONS = (1, 2)
CONTEXT_DIVISOR = 2  # neighbours weigh 1/2 (version 2)
_HEAD = struct.Struct("<IQQfffI")  # version, count, n_docs, k1, b, avgdl, context divisor m
WHERE = f"section {section_label(SectionId.BM25_INDEX)}"


def _bad(message: str) -> FormatError:
    return FormatError(f"bm25 index: {message}", check=18, section=WHERE)


def _pad8(size: int) -> int:
    return -size % 8


@dataclass(frozen=True)
class TextHits:
    ordinals: np.ndarray
    scores: np.ndarray
    query_tokens: list[str]
    # The sum of idf over the query's known terms, each as often as the query holds it:
    # the score a chunk would approach by holding every term many times. Fusion scales by it.
    idf_sum: float = 0.0


def idf(n_docs: int, df: int) -> float:
    """Lucene's BM25 idf."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


class BM25Index:
    """A BM25 index viewed from its payload: checked on open, never copied."""

    def __init__(self, payload: memoryview, n_chunks: int) -> None:
        size = len(payload)
        if size < _HEAD.size + 4:
            raise _bad(f"payload of {size} bytes is too short")
        version, count, n_docs, k1, b, avgdl, divisor = _HEAD.unpack_from(payload, 0)
        if version not in VERSIONS:
            raise _bad(f"unsupported version {version}, expected one of 1, 2")
        if (version == 1) != (divisor == 0):
            raise _bad(f"version {version} with context divisor {divisor}")
        if n_docs != n_chunks:
            raise _bad(f"indexes {n_docs} documents but the file has {n_chunks} chunks")
        if (
            not (math.isfinite(k1) and math.isfinite(b) and math.isfinite(avgdl))
            or k1 < 0
            or not (0 <= b <= 1)
        ):
            raise _bad(f"invalid parameters k1={k1} b={b} avgdl={avgdl}")
        (name_len,) = U32.unpack_from(payload, _HEAD.size)
        pos = _HEAD.size + 4 + name_len
        if pos > size:
            raise _bad("tokenizer name runs past the end")
        self.tokenizer = bytes(payload[_HEAD.size + 4 : pos]).decode("utf-8", "replace")
        tokenize = query_tokenizer_for(self.tokenizer)  # what a query to this index becomes
        if tokenize is None:
            raise _bad(
                f"tokenizer {self.tokenizer!r} is not one of {', '.join(TOKENIZERS)}, "
                "or version 4 in a language urna knows"
            )
        self.tokenize: Tokenizer = tokenize
        # The vocabulary is a string table starting at pos; walk it with a fake 12-byte prefix.
        if count > (size - pos) // 4:
            raise _bad(f"{count} terms cannot fit in {size} bytes")
        starts, lengths = _walk_vocab(payload, pos, int(count))
        vocab_end = int(starts[-1] + lengths[-1]) if count else pos
        arrays = vocab_end + _pad8(vocab_end)
        nnz_known = arrays + 8 * (count + 1)
        if nnz_known > size:
            raise _bad("indptr runs past the end")
        indptr = np.frombuffer(payload, dtype="<u8", count=int(count) + 1, offset=arrays)
        nnz = int(indptr[-1])
        expected = nnz_known + 8 * nnz + 4 * n_docs
        if expected != size:
            raise _bad(f"payload is {size} bytes, its tables need {expected}")
        if indptr[0] != 0 or np.any(np.diff(indptr.astype(np.int64)) <= 0):
            raise _bad("indptr must start at 0 and grow with every term")
        self.doc_ids = np.frombuffer(payload, dtype="<u4", count=nnz, offset=nnz_known)
        self.weights = np.frombuffer(payload, dtype="<f4", count=nnz, offset=nnz_known + 4 * nnz)
        self.doc_len = np.frombuffer(
            payload, dtype="<u4", count=int(n_docs), offset=nnz_known + 8 * nnz
        )
        if nnz and int(self.doc_ids.max()) >= n_docs:
            raise _bad(f"a posting names document {int(self.doc_ids.max())} of {n_docs}")
        if not np.all(np.isfinite(self.weights)):
            raise _bad("a posting weight is NaN or Inf")
        # A weight is idf * tf / (tf + norm) with tf >= 1 (>= 1/m in context), so it lies
        # between idf(N, N) t / (t + norm of the longest chunk) and idf(N, 0).
        scale = float(divisor or 1)
        ceiling = idf(int(n_docs), 0) * (1 + 1e-5)
        floor = 0.0
        if nnz and n_docs and avgdl > 0 and np.isfinite(avgdl) and 0 <= b <= 1 and k1 >= 0:
            longest = float(self.doc_len.max()) / scale
            norm = float(k1) * (1 - float(b) + float(b) * longest / float(avgdl))
            least = 1 / scale
            floor = idf(int(n_docs), int(n_docs)) * least / (least + norm) * (1 - 1e-5)
        if nnz and (float(self.weights.min()) < floor or float(self.weights.max()) > ceiling):
            raise _bad(f"a posting weight is outside [{floor:.6g}, {ceiling:.6g}]")
        # Increasing doc ids within each term: a decrease may only happen at a term start.
        if nnz > 1:
            drops = np.flatnonzero(np.diff(self.doc_ids.astype(np.int64)) <= 0) + 1
            if not np.all(np.isin(drops, indptr[1:-1])):
                raise _bad("doc ids within a term must be strictly increasing")
        self.payload = payload
        self._vocab = StringTable(payload, starts, lengths)
        self._ids = self._read_vocabulary()
        self.term_index = self._ids
        self.indptr = indptr
        self.n_docs = int(n_docs)
        self.k1, self.b, self.avgdl = float(k1), float(b), float(avgdl)
        self.divisor = int(divisor)  # context divisor m; 0: version 1, chunks alone
        self.scale = scale  # stored frequencies and lengths are in units of 1/scale
        self.n_terms = int(count)

    def _read_vocabulary(self) -> dict[str, int]:
        """Term -> id, the terms checked sorted, unique and UTF-8 (one copy of the
        vocabulary's bytes, sliced: 16 shards' 200,000 terms in 0.12 s of profiled time, 0.26 s
        read term by term from the payload)."""
        starts, lengths = self._vocab.starts, self._vocab.lengths
        if not len(starts):
            return {}
        first = int(starts[0])
        blob = bytes(self.payload[first : int(starts[-1] + lengths[-1])])
        ends = (starts - first + lengths).tolist()
        raws = [blob[a:b] for a, b in zip((starts - first).tolist(), ends, strict=True)]
        unsorted = next((i for i in range(1, len(raws)) if raws[i] <= raws[i - 1]), None)
        if unsorted is not None:
            raise _bad(f"vocabulary is not sorted and unique at term {unsorted}")
        table: dict[str, int] = {}
        for i, raw in enumerate(raws):
            try:
                table[raw.decode("utf-8")] = i
            except UnicodeDecodeError:
                raise _bad(f"term {i} is not valid UTF-8") from None
        return table

    def term_counts(self, tokens: Sequence[str]) -> dict[int, int]:
        """Term id -> how often the query holds it, for the known terms, in query order."""
        ids = self._ids
        counts: dict[int, int] = {}
        for token in tokens:
            i = ids.get(token)
            if i is not None:
                counts[i] = counts.get(i, 0) + 1
        return counts

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """BM25 of every chunk for the known terms among ``tokens``, each weighed by how
        often the query repeats it."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        for i, count in self.term_counts(tokens).items():
            start, end = int(self.indptr[i]), int(self.indptr[i + 1])
            weights = self.weights[start:end]
            at = self.doc_ids[start:end].astype(np.intp)  # cast once: 1.6-1.9x the scatter
            out[at] += weights if count == 1 else weights * np.float32(count)
        return out

    def postings(self, token: str) -> tuple[np.ndarray, np.ndarray]:
        """The chunks holding ``token`` (ascending) and its stored weight in each."""
        i = self._ids.get(token)
        if i is None:
            return np.empty(0, dtype=np.uint32), np.empty(0, dtype=np.float32)
        start, end = int(self.indptr[i]), int(self.indptr[i + 1])
        return self.doc_ids[start:end], self.weights[start:end]

    def search(self, text: str, k: int, allowed: np.ndarray | None = None) -> TextHits:
        """The k best chunks with a score > 0, ties in file order; ``allowed`` (sorted
        ordinals) restricts them to those chunks."""
        tokens = self.tokenize(text)
        scores = self.scores(tokens)
        idx = positive_top(scores, k, allowed, self.seed(tokens, k))
        return TextHits(idx, scores[idx], tokens, self.idf_sum(tokens))

    def seed(self, tokens: Sequence[str], k: int) -> np.ndarray | None:
        """The postings of the query's rarest term held by k chunks or more (``positive_top``'s
        seed: a rare term's chunks score high), or None."""
        indptr = self.indptr
        held = [(int(indptr[i + 1] - indptr[i]), i) for i in self.term_counts(tokens)]
        df, i = min(((df, i) for df, i in held if df >= k), default=(0, -1))
        return self.doc_ids[int(indptr[i]) : int(indptr[i + 1])] if df else None

    def idf_sum(self, tokens: Sequence[str]) -> float:
        """Sum of idf over the known query terms, with the query's repeats."""
        indptr = self.indptr
        return sum(
            count * idf(self.n_docs, int(indptr[i + 1] - indptr[i]))
            for i, count in self.term_counts(tokens).items()
        )


Postings = Callable[[str], tuple[np.ndarray, np.ndarray]]  # token -> (chunks, weights)


def scores_at(tokens: Sequence[str], rows: np.ndarray, postings: Postings) -> np.ndarray:
    """The BM25 score of each of ``rows`` (ascending): each known term's weight in the row
    (``postings`` gives a term's chunks, ascending, and weights) times the query's count of
    it, added in float32 in the query's order of first use. ``scores`` adds the same
    values in the same order, so a row scores the same bits either way, without a pass
    over every posting of the query."""
    out = np.zeros(len(rows), dtype=np.float32)
    if not len(rows):
        return out
    for token, count in Counter(tokens).items():
        docs, weights = postings(token)
        if not len(docs):
            continue
        at = np.minimum(np.searchsorted(docs, rows), len(docs) - 1)
        hit = docs[at] == rows
        found = weights[at[hit]]
        out[hit] += found if count == 1 else found * np.float32(count)
    return out


def positive_top(
    scores: np.ndarray, k: int, allowed: np.ndarray | None = None, seed: np.ndarray | None = None
) -> np.ndarray:
    """Ordinals of the k best scores above 0 (among ``allowed``), ties in file order;
    selected among the rows ``above_seed`` names when ``seed`` bounds them."""
    rows = above_seed(scores, k, seed) if allowed is None else None
    if rows is not None:
        return rows[top_k(scores[rows], k)]
    pool = scores if allowed is None else scores[allowed]
    matched = int(np.count_nonzero(pool))
    if not matched:
        best = np.empty(0, dtype=np.int64)
    elif matched * 4 < len(pool):  # few chunks match: select among them (ascending, so ties
        hit = np.flatnonzero(pool)  # stay in file order)
        best = hit[top_k(pool[hit], min(k, matched))]
    else:
        best = top_k(pool, min(k, matched))
    return best if allowed is None else allowed[best]


def above_seed(scores: np.ndarray, k: int, seed: np.ndarray | None) -> np.ndarray | None:
    """The rows (ascending) that can hold the k best scores, bounded by ``seed``: any k or
    more rows, such as one query term's postings (``BM25Index.seed``). The k-th best of
    their scores, when above 0, is at most the k-th best of all, so only the rows at or
    above it can be among the k best, and the top is selected among them without a pass
    over every row the query matched: 300,000 chunks, six-word queries, the top 10 in
    0.10 ms against 1.63 (a rare term's chunks score high, so few rows reach the bound).
    None when the seed bounds nothing: fewer than k rows, a k-th best of 0, or a score
    that is not finite (which the full path sets aside as it ranks)."""
    if seed is None or len(seed) < k or k < 1:
        return None
    low = kth_largest(scores[seed], k)
    if not (low > 0 and np.isfinite(scores).all()):
        return None
    return np.flatnonzero(scores >= low)


def load_bm25(container: Container) -> BM25Index | None:
    """The BM25 index when the manifest says there is one; refused at open when malformed."""
    present = container.has(SectionId.BM25_INDEX)
    declared = bool(container.manifest["capabilities"].get("supports_bm25"))
    if declared and not present:
        raise FormatError(
            "manifest declares supports_bm25 but the file has no bm25_index section",
            check=18,
            section=WHERE,
        )
    if not (declared and present):
        return None
    return BM25Index(container.payload(SectionId.BM25_INDEX), container.header.n_chunks)


def _walk_vocab(payload: memoryview, pos: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and lengths of the ``count`` vocabulary strings starting at ``pos``."""
    starts = [0] * count
    lengths = [0] * count
    size = len(payload)
    unpack = U32.unpack_from
    for i in range(count):
        if pos + 4 > size:
            raise _bad(f"term {i} runs past the end")
        (length,) = unpack(payload, pos)
        if pos + 4 + length > size:
            raise _bad(f"term {i} runs past the end")
        starts[i] = pos + 4
        lengths[i] = length
        pos += 4 + length
    return np.array(starts, dtype=np.int64), np.array(lengths, dtype=np.int64)
