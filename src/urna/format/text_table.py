"""A collection's text table: every shard's BM25 postings weighed under the collection's
statistics, stored once in one file beside the shards (``text-<key>.bm25``).

A shard stores its weights under its own statistics, so a collection weighed a word's
postings again the first time a query asked it (``search/postings.py``): float64 work per
posting that one file never does. The table holds those weights as they come out of that
weighing, bit for bit, so a collection's text query adds stored weights as one file does.

The table is derived data, valid for one set of files: its key is the SHA-256 of the
catalog's files (their content hashes, in catalog order). A collection with deletions has
no table (its statistics change with each one), and a table whose key is not the version's
is never read. Layout, little-endian:

- 8 bytes ``MAGIC``; 32 bytes the key; 32 bytes the SHA-256 of the payload;
- the payload: a BM25 payload as section 0x08 holds one (``index/bm25.py``), over the
  collection's ordinals (deleted or not, shard after shard), with its postings' weights
  under the collection's statistics and its header's average length the collection's.
"""

from __future__ import annotations

import hashlib
import re

from urna.format.catalog import Catalog

MAGIC = b"URNATXT\x01"
HEAD = len(MAGIC) + 32 + 32  # 72: the payload starts 8-aligned
NAME = re.compile(r"text-[0-9a-f]{24}\.bm25")
MAX_CHUNKS = 1 << 21  # the pooled text pass's bound (``search/core.py``)


def table_key(catalog: Catalog) -> bytes | None:
    """The key of the table ``catalog``'s files would have, or None when it has none: a
    deletion, a file without a content hash or BM25, or more chunks than the pooled pass
    takes."""
    files = catalog.files
    if not files or any(
        e.deleted or not e.content_hash or e.bm25_total_length is None for e in files
    ):
        return None
    if sum(e.n_chunks for e in files) > MAX_CHUNKS:
        return None
    text = "urna.text-table/1\n" + "\n".join(str(e.content_hash) for e in files)
    return hashlib.sha256(text.encode("utf-8")).digest()


def table_name(catalog: Catalog) -> str | None:
    """The file name of ``catalog``'s table (None: it has none)."""
    key = table_key(catalog)
    return None if key is None else f"text-{key.hex()[:24]}.bm25"
