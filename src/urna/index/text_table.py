"""A collection's text table (``format/text_table.py``): every shard's postings weighed under
the collection's statistics, written once after a full build or a compaction, before its
catalog becomes the head (a server swapping the new version in finds it).

Every shard's postings are weighed in one vectorized pass per shard with the operations a
query applies to one word (``index/bm25_tables.py``: the stored weight over its shard's
idf, the frequency recovered, weighed under the collection's idf and average length), so
each stored weight has the bits a query's own weighing gives; a term's postings over the
shards land in shard order, so their ordinals ascend.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TypeAlias

import numpy as np

from urna.errors import FormatError
from urna.format.atomic import atomic_writer
from urna.format.catalog import Catalog
from urna.format.mapping import map_file
from urna.format.reader import Container
from urna.format.regular import Outside, inside
from urna.format.text_table import HEAD, MAGIC, NAME, table_key, table_name
from urna.index.bm25 import BM25Index, idf, load_bm25
from urna.index.bm25_build import payload_parts
from urna.index.bm25_global import GlobalScorer, TermStats
from urna.index.bm25_tables import Tables, mean_length

Parts: TypeAlias = list[bytes | memoryview]


def weighed_payload(tables: Tables, stats: TermStats) -> Parts | None:
    """The table's payload over ``tables``' shards under ``stats`` (the collection's
    totals), in parts, or None where the shards cannot share one header (their BM25
    parameters or tokenizers differ)."""
    indexes = tables.indexes
    heads = {(x.k1, x.b, x.divisor, x.tokenizer) for x in indexes}
    if len(heads) != 1 or tables.dead is not None:
        return None
    k1, b, divisor, tokenizer = heads.pop()
    words = [list(v) for v in tables.vocabularies]  # each in its index's order
    vocab = sorted(set().union(*words))  # code point order: the bytes' order in UTF-8
    number = {t: i for i, t in enumerate(vocab)}
    maps = [np.fromiter((number[t] for t in w), dtype=np.int64, count=len(w)) for w in words]
    df = np.zeros(len(vocab), dtype=np.int64)
    for m, x in zip(maps, indexes, strict=True):
        df[m] += _counts(x)
    collection_idf = np.array([idf(stats.n_docs, d) for d in df.tolist()], dtype=np.float64)
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    fill = indptr[:-1].copy()  # where each term's next shard's postings go
    rows_out = np.empty(int(indptr[-1]), dtype=np.uint32)
    weights_out = np.empty(int(indptr[-1]), dtype=np.float32)
    for s, (m, x) in enumerate(zip(maps, indexes, strict=True)):
        counts = _counts(x)
        local = np.array([idf(x.n_docs, c) for c in counts.tolist()], dtype=np.float64)
        rows = x.doc_ids.astype(np.int64) + tables.at[s]
        weights = tables.weigh_rows(
            rows,
            x.weights,
            np.repeat(local, counts),  # each over its shard's idf
            tables.params[s][2],
            np.repeat(collection_idf[m], counts),
            stats,
        )
        at = np.repeat(fill[m] - x.indptr[:-1].astype(np.int64), counts) + np.arange(len(rows))
        fill[m] += counts
        rows_out[at] = rows
        weights_out[at] = weights
    lengths = np.concatenate([x.doc_len for x in indexes])
    head = (len(lengths), k1, b, mean_length(stats), divisor, tokenizer)
    return payload_parts(head, vocab, indptr, rows_out, weights_out, lengths)


def open_table(
    folder: Path, catalog: Catalog, n_chunks: int, *, hashes: bool, private: bool = False
) -> BM25Index | None:
    """``catalog``'s table when the folder holds it (None: it has none, or it was not
    written); a damaged one is refused. ``hashes``: its payload's SHA-256 is checked."""
    name, key = table_name(catalog), table_key(catalog)
    if name is None or key is None:
        return None
    try:
        path = inside(folder, name)
    except Outside as exc:
        raise bad_table(name, str(exc)) from None
    if not path.is_file():
        return None
    buf, size = map_file(path, private=private)
    if buf is None or size < HEAD or buf[: len(MAGIC)] != MAGIC:
        raise bad_table(name, "not a text table (its first bytes are not urna's)")
    if buf[len(MAGIC) : len(MAGIC) + 32] != key:
        raise bad_table(name, "its key is not that of the catalog's files")
    payload = memoryview(buf)[HEAD:]
    if hashes and hashlib.sha256(payload).digest() != buf[len(MAGIC) + 32 : HEAD]:
        raise bad_table(name, "its payload does not match its SHA-256")
    try:
        return BM25Index(payload, n_chunks)
    except FormatError as exc:
        raise bad_table(name, str(exc)) from None


def table_intact(folder: Path, catalog: Catalog) -> bool:
    """Whether ``catalog``'s text table is there and passes its checks (or it has none)."""
    if table_name(catalog) is None:
        return True
    try:  # the table's map goes with the last view of it, at once
        return open_table(folder, catalog, catalog.n_chunks, hashes=True) is not None
    except FormatError:
        return False


def bad_table(name: str, message: str) -> FormatError:
    fix = "remove it (the collection answers without it); urna compact writes it again"
    return FormatError(f"text table {name}: {message}; {fix}", check=19, section="catalog.json")


def _counts(index: BM25Index) -> np.ndarray:
    """Each term's number of postings in ``index``."""
    return np.diff(index.indptr.astype(np.int64))


def write_table(
    folder: Path, catalog: Catalog, tables: Tables | None, stats: TermStats | None
) -> str | None:
    """Write ``catalog``'s table (atomically; from ``tables`` under ``stats``, None for
    none) and remove every other table; its name, or None when it has none."""
    key, name = table_key(catalog), table_name(catalog)
    payload = None
    if key is not None and tables is not None and stats is not None:
        payload = weighed_payload(tables, stats)
    if key is not None and name is not None and payload is not None:
        digest = hashlib.sha256()
        for part in payload:
            digest.update(part)
        with atomic_writer(folder / name) as handle:
            handle.write(MAGIC + key + digest.digest())
            for part in payload:
                handle.write(part)
    else:
        name = None
    for path in folder.iterdir():
        if NAME.fullmatch(path.name) and path.name != name:
            path.unlink(missing_ok=True)
    return name


def write_text_table(folder: Path, catalog: Catalog, weigh: bool = True) -> str | None:
    """Weigh and write ``catalog``'s text table from its files (read as containers, with the
    structural checks), and remove any other; its file name, or None when it has none
    (``weigh`` False: only remove the others)."""
    if not weigh or table_name(catalog) is None:
        return write_table(folder, catalog, None, None)
    containers: list[Container] = []
    try:
        for entry in catalog.files:
            containers.append(Container(inside(folder, entry.file or ""), verify="trusted"))
        scorers = _scorers(containers)
        if scorers is None:
            return write_table(folder, catalog, None, None)
        offsets = np.cumsum([0, *(s.index.n_docs for s in scorers)])
        stats = TermStats.combine([s.stats([]) for s in scorers])
        return write_table(folder, catalog, Tables([(s, None) for s in scorers], offsets), stats)
    finally:
        for container in containers:
            container.close()


def _scorers(containers: Sequence[Container]) -> list[GlobalScorer] | None:
    out = []
    for container in containers:
        index = load_bm25(container)
        if index is None:
            return None
        out.append(GlobalScorer(index))
    return out
