"""The exact path: one matrix-vector product over every stored vector (or a filtered subset),
then top k; and the full-precision rerank copy (section 0x09) when the file keeps one."""

from __future__ import annotations

import numpy as np

from urna.errors import FormatError
from urna.format.embeddings import Matrix
from urna.format.embeddings import view as view_matrix
from urna.format.layout import Encoding, SectionId, section_label
from urna.format.reader import Container
from urna.index.scan import quantized_top_k
from urna.index.topk import top_k


def exact_top_k(
    matrix: Matrix, query: np.ndarray, k: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(ordinals, scores) of the k best rows, ties in file order.

    ``allowed`` (sorted ordinals) restricts the search to those rows, exactly: the k best
    among them, however few they are.
    """
    if allowed is None:
        fast = quantized_top_k(matrix, query, k)
        if fast is not None:
            return fast
        scores = matrix.dot(query)
        idx = top_k(scores, k)
        return idx, scores[idx]
    if len(allowed) * 4 < matrix.n:  # selective: score only the allowed rows
        with np.errstate(over="ignore", invalid="ignore"):
            scores = matrix.rows(allowed) @ query
    else:
        fast = quantized_top_k(matrix, query, k, allowed)
        if fast is not None:
            return fast
        scores = matrix.dot(query)[allowed]
    best = top_k(scores, k)
    return allowed[best], scores[best]


def rerank_top(
    matrix: Matrix, candidates: np.ndarray, query: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k best of distinct candidates by exact cosine over ``matrix``, ties in file order."""
    order = np.sort(candidates)
    with np.errstate(over="ignore", invalid="ignore"):  # a forged row: top_k drops it
        scores = matrix.rows(order) @ query
    best = top_k(scores, k)
    return order[best], scores[best]


def load_rerank_matrix(container: Container) -> Matrix:
    """0x09 (a float32 copy of quantized embeddings) when present, else the stored matrix."""
    if not container.has(SectionId.EMBEDDINGS_FP):
        return container.matrix
    entry = container.entries[SectionId.EMBEDDINGS_FP]
    n, dim = container.header.n_chunks, container.header.embedding_dim
    where = f"section {section_label(SectionId.EMBEDDINGS_FP)}"
    if entry.encoding != Encoding.RAW:
        raise FormatError(
            f"embeddings_fp must be raw float32, got {entry.encoding.label}",
            check=18,
            section=where,
        )
    if entry.size != n * dim * 4:
        raise FormatError(
            f"embedding size mismatch: expected {n * dim * 4}, got {entry.size}",
            check=18,
            section=where,
        )
    matrix = view_matrix(container.payload(SectionId.EMBEDDINGS_FP), Encoding.RAW, n, dim)
    if container.verify == "full" and matrix.first_non_finite() is not None:
        raise FormatError("NaN or Inf detected in embeddings_fp", check=18, section=where)
    return matrix
