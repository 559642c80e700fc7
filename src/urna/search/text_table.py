"""``validate``'s check of a collection's text table: its weights are its shards' own,
weighed again (it is opened, weighed and written by ``index/text_table.py``)."""

from __future__ import annotations

from urna.index.bm25 import BM25Index
from urna.index.bm25_global import TermStats
from urna.index.text_table import Parts, bad_table, weighed_payload
from urna.search.postings import CollectionPostings


def check_table(
    name: str, table: BM25Index, postings: CollectionPostings, stats: TermStats
) -> None:
    """Refuse a table whose bytes are not those its shards give (``validate``)."""
    parts = weighed_payload(postings.tables, stats)
    if parts is None or not _same(table.payload, parts):
        raise bad_table(name, "its weights are not its shards' weighed under their statistics")


def _same(kept: memoryview, parts: Parts) -> bool:
    at = 0
    for part in parts:
        if kept[at : at + len(part)] != part:
            return False
        at += len(part)
    return at == len(kept)
