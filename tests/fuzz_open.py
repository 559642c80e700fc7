"""Coverage-guided fuzz target (atheris): any bytes, resealed (every checksum recomputed so
the structural checks are what gets fuzzed), opened and searched by every path.

The property: a clean ``UrnaError`` or a correct answer; any other exception, a crash or a
hang is a finding. Run it for a while with

    python -m tests.fuzz_open tests/fuzz_crashers -max_total_time=300

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
    calls = [lambda: corpus.search(q, k=5), lambda: corpus.search(q, k=3, source="*.md")]
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


def main() -> None:
    import atheris

    import urna.search.opening  # noqa: F401  (load the reader and every index, then instrument)

    atheris.instrument_all()
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
