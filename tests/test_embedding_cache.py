"""The embedding cache under several writers: processes opening one new cache file at the
same moment (as ``build --jobs`` workers do) all set it up, write to it and read it back."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import numpy as np

from urna.embed.cache import EmbeddingCache

WRITERS, FILES = 6, 25


def _writer(folder: str, seed: int, start: Any, results: Any) -> None:
    rng = np.random.default_rng(seed)
    found = 0
    try:
        for n in range(FILES):
            start.wait(timeout=60)  # every writer opens the same new file at once
            cache = EmbeddingCache(Path(folder) / f"c{n}" / "embeddings.sqlite")
            texts = [f"text {seed} {n} {i}" for i in range(20)]
            vectors = rng.standard_normal((20, 8)).astype(np.float32)
            cache.put_many("m", texts, vectors)
            back = cache.get_many("m", texts, 8)
            found += sum(
                v is not None and np.array_equal(v, w) for v, w in zip(back, vectors, strict=True)
            )
            cache.close()
        results.put((seed, found))
    except Exception as exc:  # reported, not lost in the child
        results.put((seed, repr(exc)))


def test_writers_open_one_new_cache_file_at_once(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Barrier(WRITERS), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(str(tmp_path), s, start, results)) for s in range(WRITERS)
    ]
    for p in procs:
        p.start()
    outcome = dict(results.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert outcome == {s: FILES * 20 for s in range(WRITERS)}
