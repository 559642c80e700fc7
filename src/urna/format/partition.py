"""Deterministic partitioning: a source goes to a bucket by the SHA-256 of its source_uri, and
each shard holds a contiguous range of buckets. The same source lands in the same shard on
every machine and every run."""

from __future__ import annotations

import hashlib

N_BUCKETS = 4096


def bucket_of(source_uri: str, n_buckets: int = N_BUCKETS) -> int:
    """The first 8 bytes of SHA-256(source_uri, UTF-8), big-endian, modulo the bucket count."""
    digest = hashlib.sha256(source_uri.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n_buckets


def bucket_ranges(n_shards: int, n_buckets: int = N_BUCKETS) -> list[tuple[int, int]]:
    """Shard i holds buckets [i * B // N, (i + 1) * B // N)."""
    return [(i * n_buckets // n_shards, (i + 1) * n_buckets // n_shards) for i in range(n_shards)]


def shard_of(bucket: int, n_shards: int, n_buckets: int = N_BUCKETS) -> int:
    """The shard whose range holds ``bucket`` (the inverse of ``bucket_ranges``)."""
    return ((bucket + 1) * n_shards - 1) // n_buckets
