"""The deep walk behind ``urna validate``: what a full open does not recompute.

A full open proves the bytes are the bytes that were written. The audit also
proves they are self-consistent: every chunk_id is recomputed from the text,
source, span and chunker version it claims to identify, ids are unique, and
every embedding row is walked for NaN/Inf and a norm other than 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from urna.errors import FormatError
from urna.format.identity import chunk_id
from urna.format.layout import SectionId, section_label
from urna.format.reader import Container
from urna.format.sections import first_non_hex_chunk_id


@dataclass(frozen=True)
class AuditReport:
    n_chunks: int
    n_sections: int
    file_hash: str
    content_hash: str


def audit(container: Container) -> AuditReport:
    n = int(container.header.n_chunks)
    where = f"section {section_label(SectionId.CHUNK_IDS)}"
    row = container.matrix.first_non_finite()
    if row is not None:
        raise FormatError(
            f"NaN or Inf detected in embeddings (row {row})",
            check=16,
            section=f"section {section_label(SectionId.EMBEDDINGS)}",
        )
    off = container.matrix.first_not_unit()
    if off is not None:
        raise FormatError(
            f"embedding row {off[0]} has L2 norm {off[1]:.6g}; the manifest says rows are "
            "L2-normalized",
            check=16,
            section=f"section {section_label(SectionId.EMBEDDINGS)}",
        )
    rows = container.chunk_id_rows
    bad = first_non_hex_chunk_id(rows)
    if bad is not None:
        raise FormatError(
            f"chunk id {bad} is not sha256:<64 lowercase hex>", check=17, section=where
        )
    unique, first, counts = np.unique(rows, axis=0, return_index=True, return_counts=True)
    if len(unique) != n:
        dup = int(first[np.flatnonzero(counts > 1)[0]])
        raise FormatError(
            f"chunk id of chunk {dup} appears more than once", check=17, section=where
        )
    chunker = container.manifest["chunker_version"]
    texts, spans = container.texts, container.spans
    for i in range(n):
        expected = chunk_id(
            texts[i], spans.uris[i], int(spans.byte_start[i]), int(spans.byte_end[i]), chunker
        )
        if rows[i].tobytes() != expected.encode("ascii"):
            raise FormatError(
                f"chunk id mismatch at chunk {i}: stored {rows[i].tobytes().decode()}, "
                f"recomputed {expected}",
                check=17,
                section=where,
            )
    return AuditReport(
        n_chunks=n,
        n_sections=len(container.entries),
        file_hash=container.file_hash,
        content_hash=container.content_hash,
    )
