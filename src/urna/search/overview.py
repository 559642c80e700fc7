"""A corpus at a glance, for the search page's landing state: its title, how many documents
and chunks it holds, its model, when its file was written, and a few example queries drawn
from its own section titles.

Examples come from the section titles of up to ``SAMPLED`` chunks spread evenly over the
corpus: a title below the document's own (``Guide / Install / Linux`` gives ``Linux``), of
two to eight words, first seen in file order, one per source in turn, from sources spread
over the corpus. A corpus without section titles has none; the page then says to ask in
your own words. An overview is computed once per file (keyed by its file hash).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from urna.format.catalog import CATALOG
from urna.search.metadata import BUILT_IN
from urna.search.protocol import Searchable

SAMPLED = 2000  # chunks whose section titles are read
EXAMPLES = 4
WORDS = re.compile(r"[^\W_]+")
_cache: OrderedDict[str, dict[str, Any]] = OrderedDict()
_lock = threading.Lock()
KEPT = 32


def overview(name: str, corpus: Searchable) -> dict[str, Any]:
    """What the landing state shows of one served corpus."""
    with _lock:
        known = _cache.get(corpus.file_hash)
    if known is None:
        known = _compute(corpus)
        with _lock:
            _cache[corpus.file_hash] = known
            while len(_cache) > KEPT:
                _cache.popitem(last=False)
    manifest: dict[str, Any] = getattr(corpus, "manifest", {}) or {}
    return {
        "name": name,
        "title": manifest.get("title") or name,
        "description": manifest.get("description") or "",
        "documents": known["documents"],
        "chunks": corpus.n_chunks,
        "model": corpus.model,
        "built": known["built"],
        "examples": known["examples"],
        # The fields a search can count and filter by, format first (the page's facets).
        "fields": [
            {"name": name, "types": sorted(kinds)}
            for name, kinds in sorted(
                corpus.fields().items(), key=lambda f: (f[0] != "format", f[0])
            )
            if name not in BUILT_IN
        ],
    }


def _compute(corpus: Searchable) -> dict[str, Any]:
    live = corpus.live_ordinals()
    uris: list[str] = corpus.source_uris(live) if len(live) else []
    return {
        "documents": len(set(uris)),
        "built": _written(corpus.path),
        "examples": _examples(corpus),
    }


def _written(path: Path) -> str:
    """When the file (a collection: its catalog) was last written, in UTC."""
    target = path / CATALOG if path.is_dir() else path
    try:
        stamp = target.stat().st_mtime
    except OSError:
        return ""
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _examples(corpus: Searchable) -> list[str]:
    live = corpus.live_ordinals()
    n = len(live)
    picks: list[int] = []
    if n:
        at = np.unique(np.linspace(0, n - 1, num=min(n, SAMPLED)).astype(np.int64))
        picks = live[at].tolist()
    by_source: dict[str, list[str]] = {}
    seen: set[str] = set()
    for i in picks:
        try:
            chunk = corpus.chunk(i)
        except (IndexError, ValueError):
            continue
        title = _title(chunk.section_path)
        if title and title.casefold() not in seen:
            seen.add(title.casefold())
            by_source.setdefault(chunk.source_uri, []).append(title)
    chosen: list[str] = []
    queues = list(by_source.values())
    if len(queues) > EXAMPLES:  # sources spread over the corpus come first
        first = sorted({round(i * (len(queues) - 1) / (EXAMPLES - 1)) for i in range(EXAMPLES)})
        queues = [queues[i] for i in first] + [q for i, q in enumerate(queues) if i not in first]
    depth = 0
    while len(chosen) < EXAMPLES and any(depth < len(q) for q in queues):
        for titles in queues:
            if depth < len(titles) and len(chosen) < EXAMPLES:
                chosen.append(titles[depth])
        depth += 1
    return chosen


def _title(section_path: str) -> str:
    parts = [p.strip() for p in section_path.split(" / ") if p.strip()]
    if len(parts) < 2:
        return ""
    title = parts[-1]
    words = WORDS.findall(title)
    if not 2 <= len(words) <= 8 or len(title) > 60 or not any(w.isalpha() for w in words):
        return ""
    return title
