"""What a build reports: files, documents, chunks, vectors embedded and reused, the result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Report = Callable[[str], None]


def quiet(_: str) -> None:
    return None


@dataclass
class BuildSummary:
    output: Path
    files: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    documents: int = 0
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    size: int = 0
    seconds: float = 0.0
    file_hash: str = ""
    content_hash: str = ""
    model: str = ""
    dry_run: bool = False
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class CollectionSummary(BuildSummary):
    shards: int = 0
    rebuilt: list[Any] = field(default_factory=list)  # the ShardReports of the shards built
    kept: list[str] = field(default_factory=list)
    version: str = ""
    changes: dict[str, int] | None = None  # an update's sources added, changed and removed
    segments: int = 0
    updated: bool = False  # written as an update (not shard by shard)
