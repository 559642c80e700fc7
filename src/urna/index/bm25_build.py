"""Writing section 0x08: the BM25 payload of ``index/bm25.py`` from chunk texts.

Postings are gathered as flat arrays (one entry per chunk and term: the chunk, the term's
number, its frequency), then sorted once into the payload's order (terms by bytes, chunks
ascending) and summed where a chunk holds a term twice (its own and a neighbour's). Flat
arrays take 12 bytes an entry where dicts of dicts took about 150: a million chunks of
about 50 distinct terms each build in 2 GB instead of 15. The numbers written are those of
the formula in ``index/bm25.py``, computed in the same float64 operations.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence

import numpy as np

from urna.format.sections import U32
from urna.index.bm25 import _HEAD, K1, B, idf
from urna.index.mixed import reader_of
from urna.index.tokenize import PER_DOCUMENT, TOKENIZER_VERSION, tokenizer_for


def build_payload(
    documents: Sequence[str],
    *,
    k1: float = K1,
    b: float = B,
    tokenizer: str = TOKENIZER_VERSION,
    sources: Sequence[object] | None = None,
    divisor: int = 0,
    languages: Sequence[object] | None = None,
) -> bytes:
    """The 0x08 payload for these chunk texts (in file order), tokenized by ``tokenizer``.
    With ``divisor`` m >= 1 (version 2), each chunk also holds its neighbours of the same
    source (``sources``: one key per chunk) at weight 1/m. Under version 5, ``languages``
    holds each chunk's ``lang`` field (``index/mixed.py``)."""
    tokenize = tokenizer_for(tokenizer)
    if tokenize is None:
        raise ValueError(f"unknown tokenizer {tokenizer!r}")
    if divisor and (sources is None or len(sources) != len(documents)):
        raise ValueError("a context divisor needs one source key per document")
    readers = None
    if tokenizer == PER_DOCUMENT:
        if languages is None or len(languages) != len(documents):
            raise ValueError("a per-document tokenizer needs one language per document")
        readers = [reader_of(v) for v in languages]
    n = len(documents)
    numbers: dict[str, int] = {}
    docs, terms, freqs = array("I"), array("I"), array("I")
    lengths = np.zeros(n, dtype=np.int64)
    for at, text in enumerate(documents):
        counts = Counter((readers[at] if readers else tokenize)(text))
        lengths[at] = sum(counts.values())
        docs.extend([at] * len(counts))
        terms.extend(numbers.setdefault(t, len(numbers)) for t in counts)
        freqs.extend(counts.values())
    doc = np.frombuffer(docs, dtype=np.uint32).astype(np.int64)
    term = np.frombuffer(terms, dtype=np.uint32).astype(np.int64)
    freq = np.frombuffer(freqs, dtype=np.uint32).astype(np.int64)
    del docs, terms, freqs
    if divisor:
        assert sources is not None
        doc, term, freq, lengths = _in_context(doc, term, freq, lengths, sources, divisor)
    vocab = sorted(numbers, key=lambda t: t.encode("utf-8"))
    rank = np.empty(len(vocab), dtype=np.int64)
    rank[[numbers[t] for t in vocab]] = np.arange(len(vocab))
    key = rank[term] * max(n, 1) + doc  # the payload's order: term by bytes, then chunk
    del term
    order = np.argsort(key, kind="stable")
    key, freq = key[order], freq[order]
    del order, doc
    if len(key):
        first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        freq, key = np.add.reduceat(freq, first), key[first]
        del first
    by_term, doc_ids = np.divmod(key, max(n, 1))
    del key
    df = np.bincount(by_term, minlength=len(vocab))
    indptr = np.zeros(len(vocab) + 1, dtype=np.uint64)
    np.cumsum(df, out=indptr[1:])
    scale = float(divisor or 1)
    real = lengths.astype(np.float64) / scale
    avgdl = float(real.mean()) if n else 0.0
    norm = k1 * (1 - b + b * real / (avgdl or 1.0))
    term_weight = np.array([idf(n, int(d)) for d in df.tolist()], dtype=np.float64)
    tf = freq.astype(np.float64) / scale
    weights = (term_weight[by_term] * tf / (tf + norm[doc_ids])).astype(np.float32)
    head = (n, k1, b, avgdl, divisor, tokenizer)
    return b"".join(payload_parts(head, vocab, indptr, doc_ids, weights, lengths))


def payload_parts(
    head: tuple[int, float, float, float, int, str],
    vocab: Sequence[str],
    indptr: np.ndarray,
    doc_ids: np.ndarray,
    weights: np.ndarray,
    lengths: np.ndarray,
) -> list[bytes | memoryview]:
    """The payload's bytes in parts: ``head`` is (n_docs, k1, b, avgdl, context divisor,
    tokenizer), ``vocab`` sorted by bytes, the arrays as ``index/bm25.py`` lays them out, in
    their own memory where their types are already the payload's (a caller writing them to
    a file copies nothing)."""
    n, k1, b, avgdl, divisor, tokenizer = head
    name = tokenizer.encode("utf-8")
    packed = _HEAD.pack(2 if divisor else 1, len(vocab), n, k1, b, avgdl, divisor)
    parts = [packed, U32.pack(len(name)), name]
    for word in vocab:
        raw = word.encode("utf-8")
        parts.append(U32.pack(len(raw)))
        parts.append(raw)
    size = sum(len(p) for p in parts)
    head_bytes = b"".join([*parts, b"\0" * (-size % 8)])
    arrays = ((indptr, "<u8"), (doc_ids, "<u4"), (weights, "<f4"), (lengths, "<u4"))
    out: list[bytes | memoryview] = [head_bytes]
    for a, kind in arrays:
        out.append(np.ascontiguousarray(np.asarray(a).astype(kind, copy=False)).data.cast("B"))
    return out


def _in_context(
    doc: np.ndarray,
    term: np.ndarray,
    freq: np.ndarray,
    lengths: np.ndarray,
    sources: Sequence[object],
    m: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each chunk's entries in units of 1/m: m x its own, plus those of its neighbours in
    the same source (entries left unsummed: the caller sums them)."""
    n = len(lengths)
    keys = list(sources)
    same_next = np.array([keys[i] == keys[i + 1] for i in range(n - 1)], dtype=bool)
    # An entry of chunk j also counts for chunk j + 1 (and j - 1) when they share a source.
    to_next = same_next[doc[doc < n - 1]] if n > 1 else np.empty(0, bool)
    down = np.flatnonzero(doc < n - 1)[to_next]
    to_prev = same_next[doc[doc > 0] - 1] if n > 1 else np.empty(0, bool)
    up = np.flatnonzero(doc > 0)[to_prev]
    out_doc = np.concatenate((doc, doc[down] + 1, doc[up] - 1))
    out_term = np.concatenate((term, term[down], term[up]))
    out_freq = np.concatenate((freq * m, freq[down], freq[up]))
    total = lengths * m
    if n > 1:
        total[1:] += np.where(same_next, lengths[:-1], 0)
        total[:-1] += np.where(same_next, lengths[1:], 0)
    return out_doc, out_term, out_freq, total


def total_length(payload: bytes, n_docs: int) -> int:
    """The sum of a payload's stored document lengths (its last array, ``payload_parts``):
    what a catalog records of a shard, read from the bytes just built."""
    lengths = np.frombuffer(payload, dtype="<u4", count=n_docs, offset=len(payload) - 4 * n_docs)
    return int(lengths.sum(dtype=np.int64))
