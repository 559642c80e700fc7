"""A stored BM25 index checked against the texts it derives from (``urna validate``): an open
proves its bytes and bounds; this proves it is the index of the stored texts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from urna.errors import FormatError
from urna.index.bm25 import WHERE, BM25Index
from urna.index.bm25_build import build_payload


def _bad(message: str) -> FormatError:
    return FormatError(f"bm25 index: {message}", check=18, section=WHERE)


def check_rebuilt(
    payload: memoryview,
    documents: Sequence[str],
    sources: Sequence[object],
    languages: Sequence[object] | None = None,
) -> None:
    """Refuse a stored index that is not what ``build_payload`` makes of ``documents`` (the
    texts it derives from, with ``sources``, each chunk's source, for its neighbours) with
    the parameters, tokenizer and context it records (and, under version 5, each chunk's
    ``lang`` field, ``languages``): every weight, posting, term and length recomputed."""
    stored = BM25Index(payload, len(documents))
    # The parameters were written as float32: the shortest decimal that rounds to them is
    # the value the build computed with (1.2, not 1.2000000476837158).
    k1, b = (float(str(np.float32(x))) for x in (stored.k1, stored.b))
    try:
        rebuilt = build_payload(
            documents,
            k1=k1,
            b=b,
            tokenizer=stored.tokenizer,
            sources=sources,
            divisor=stored.divisor,
            languages=languages,
        )
    except ValueError as exc:
        raise _bad(str(exc)) from None
    if bytes(payload) == rebuilt:
        return
    fresh = BM25Index(memoryview(rebuilt), len(documents))
    if not np.array_equal(stored.doc_len, fresh.doc_len):
        row = int(np.flatnonzero(stored.doc_len != fresh.doc_len)[0])
        raise _bad(
            f"chunk {row} has length {int(stored.doc_len[row])}, its text gives "
            f"{int(fresh.doc_len[row])}"
        )
    if stored.n_terms != fresh.n_terms or not np.array_equal(stored.indptr, fresh.indptr):
        raise _bad("its terms or postings are not those of the stored texts")
    if not np.array_equal(stored.doc_ids, fresh.doc_ids):
        raise _bad("its postings are not those of the stored texts")
    if not np.array_equal(stored.weights, fresh.weights):
        at = int(np.flatnonzero(stored.weights != fresh.weights)[0])
        raise _bad(
            f"weight {at} is {float(stored.weights[at])!r}, the stored texts give "
            f"{float(fresh.weights[at])!r}"
        )
    raise _bad("it is not the index of the stored texts (its header or vocabulary differs)")
