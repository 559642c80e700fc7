"""The query embedder: the numpy encoder where it reproduces the model's shipped reference
vectors, else the model itself (sentence-transformers) in float32.

A cold text query (``ask``, ``retrieve``, ``search-text``, ``find``, a server's first query)
embeds one short text. Importing torch and sentence-transformers for it costs seconds; the
numpy encoder (``numpy_bert``) reads the same model files and costs milliseconds. Queries
are embedded in float32 on either path (the two agree to a cosine of 0.99999996 on the
probe sentences), so a query scores the same in every process and interface, within 1e-6.

Which path runs depends on the model files alone: the numpy encoder is used for a model
whose reference vectors ship with urna (``references/<model hash>.json``: fixed probe
sentences embedded by sentence-transformers in float32) when its own vectors for those
sentences match them within ``MIN_COSINE``. The outcome is cached per model hash and
reference file; it is the same whether or not a build or another query ran first. A model
without shipped references (or with ``URNA_FAST_QUERY=0``) takes the reference path.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from urna.embed.base import cache_dir, count_with
from urna.embed.batching import RECIPE as BATCHING
from urna.embed.model_hash import model_files, model_hash
from urna.embed.numpy_bert import NumpyBert, why_unsupported
from urna.errors import ModelError, UrnaError
from urna.format.atomic import atomic_writer
from urna.native import one_blas_thread

FAST_VARIABLE = "URNA_FAST_QUERY"
PROBE_VERSION = "urna-query-probe/2"
MIN_COSINE = 0.99999
PROBES = (
    "how do I install urna on Linux?",
    "What is the circulating currency of the United States?",
    "model hash",
    "x",
    "Naïve café owners in Zürich — 東京 and Αθήνα — asked: 'why 42%?'",
    "BM25 weights rare terms; cosine similarity compares embeddings of 384 dimensions.",
    "The quick brown fox jumps over the lazy dog. " * 40,  # past the window: truncated
)


def fast_enabled() -> bool:
    return os.environ.get(FAST_VARIABLE, "1").strip() != "0"


def _stat_key(folder: Path) -> list[list[Any]]:
    return [
        [rel, st.st_size, st.st_mtime_ns, st.st_ino]
        for rel, path in model_files(folder)
        for st in (path.stat(),)
    ]


def cached_model_hash(folder: Path) -> str:
    """``model_hash(folder)``, remembered in the cache against every file's size, mtime and
    inode: recomputed whenever any of them changes (or a file comes or goes)."""
    key = _stat_key(folder)
    record = cache_dir() / "model-hashes" / (_name(str(folder.resolve())) + ".json")
    try:
        saved = json.loads(record.read_text())
        if saved.get("files") == key and str(saved.get("model_hash", "")).startswith("sha256:"):
            return str(saved["model_hash"])
    except (OSError, ValueError, AttributeError):
        pass
    found = model_hash(folder)
    _write_json(record, {"folder": str(folder.resolve()), "files": key, "model_hash": found})
    return found


def _name(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _write_json(path: Path, value: dict[str, Any]) -> None:
    """Atomically, best effort: the cache is an optimisation, so a read-only cache folder is
    not an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(path) as handle:
            handle.write(json.dumps(value).encode("utf-8"))
    except (OSError, UrnaError):
        pass


REFERENCES = Path(__file__).resolve().parent / "references"


def shipped_reference(model_hash_: str) -> tuple[list[str], np.ndarray] | None:
    """The probe texts and float32 reference vectors shipped for a model, or None."""
    path = REFERENCES / (model_hash_.removeprefix("sha256:") + ".json")
    try:
        record = json.loads(path.read_text())
        texts = [str(t) for t in record["texts"]]
        vectors = np.asarray(record["vectors"], dtype=np.float32)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if record.get("model_hash") != model_hash_ or vectors.shape[0] != len(texts):
        return None
    return texts, vectors


def write_reference(path: Path, model: str, model_hash_: str, reference: Any) -> None:
    """Ship ``reference(PROBES)`` (float32 unit vectors from sentence-transformers) as the
    model's reference file (``scripts/make-query-reference`` calls this)."""
    vectors = np.asarray(reference(list(PROBES)), dtype=np.float32)
    record = {
        "probe": PROBE_VERSION,
        "model": model,
        "model_hash": model_hash_,
        "precision": "float32",
        "texts": list(PROBES),
        "vectors": [[float(x) for x in row] for row in vectors],
    }
    with atomic_writer(path) as handle:
        handle.write((json.dumps(record) + "\n").encode("utf-8"))


def _check_path(model_hash_: str) -> Path:
    return cache_dir() / "query-check" / (model_hash_.removeprefix("sha256:") + ".json")


def compare(reference: np.ndarray, ours: np.ndarray) -> float:
    """The smallest cosine between paired rows (unit vectors)."""
    if reference.shape != ours.shape:
        return -1.0
    return float(np.min(np.sum(reference.astype(np.float64) * ours, axis=1)))


def checked_against_reference(
    folder: Path, model_hash_: str, max_tokens: int
) -> dict[str, Any] | None:
    """Whether the numpy encoder reproduces the shipped reference vectors of this model
    (None: no reference ships for it). Computed once per model and reference file, then
    read from the cache; recomputing would give the same answer."""
    shipped = shipped_reference(model_hash_)
    if shipped is None:
        return None
    texts, vectors = shipped
    digest = _name(json.dumps([texts, vectors.tobytes().hex()]))
    try:
        saved = json.loads(_check_path(model_hash_).read_text())
        if saved.get("probe") == PROBE_VERSION and saved.get("reference") == digest:
            return dict(saved)
    except (OSError, ValueError, AttributeError):
        pass
    try:
        cosine, note = compare(vectors, NumpyBert(folder, max_tokens).embed(texts)), ""
    except (ModelError, ValueError, IndexError, KeyError, TypeError) as exc:  # files it misreads
        cosine, note = -1.0, f"{type(exc).__name__}: {exc}"
    record = {
        "probe": PROBE_VERSION,
        "model_hash": model_hash_,
        "reference": digest,
        "min_cosine": cosine,
        "ok": cosine >= MIN_COSINE,
        **({"note": note} if note else {}),
    }
    _write_json(_check_path(model_hash_), record)
    return record


class Coalescer:
    """Concurrent ``embed`` calls share one encoder: whoever finds it idle embeds everything
    queued, and keeps going while more arrives; the others wait for theirs. One caller alone
    waits for nothing. The encoder gives each text a pass of its own (a pass over several
    would change their bits, ``embed/numpy_bert.py``), so what this saves is the BLAS
    threads of many requests contending for the same cores, and repeated texts are served
    before they get here (``embed/query_cache.py``)."""

    def __init__(self, embed: Any, limit: int = 32) -> None:
        self._embed = embed
        self._limit = limit
        self._lock = threading.Lock()
        self._queue: list[dict[str, Any]] = []
        self._running = False

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        item: dict[str, Any] = {"texts": list(texts), "done": threading.Event()}
        with self._lock:
            self._queue.append(item)
            lead = not self._running
            self._running = True
        if lead:
            self._serve()
        item["done"].wait()
        if "error" in item:
            raise item["error"]
        return np.asarray(item["out"])

    def _serve(self) -> None:
        while True:
            with self._lock:
                batch: list[dict[str, Any]] = []
                taken = 0
                while self._queue and (
                    not batch or taken + len(self._queue[0]["texts"]) <= self._limit
                ):
                    batch.append(self._queue.pop(0))
                    taken += len(batch[-1]["texts"])
                if not batch:
                    self._running = False
                    return
            try:
                vectors = self._embed([t for item in batch for t in item["texts"]])
            except BaseException as exc:  # every waiter gets the error
                for item in batch:
                    item["error"] = exc
                    item["done"].set()
                continue
            at = 0
            for item in batch:
                item["out"] = vectors[at : at + len(item["texts"])]
                at += len(item["texts"])
                item["done"].set()


class FastQueryEmbedder:
    """The numpy encoder behind the ``Embedder`` interface (float32 arithmetic)."""

    precision = "float32"
    batching = BATCHING

    def __init__(self, name: str, folder: Path, model_hash_: str, dim: int, max_tokens: int):
        self._name = name
        self._folder = folder
        self._hash = model_hash_
        self._dim = dim
        self._max_tokens = max_tokens

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def model_hash(self) -> str:
        return self._hash

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    @cached_property
    def _encoder(self) -> NumpyBert:
        return NumpyBert(self._folder, self._max_tokens)

    @cached_property
    def _shared(self) -> Coalescer:
        return Coalescer(self._encoder.embed)

    @cached_property
    def _counter(self) -> Any:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self._folder / "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()  # count every token, as the reference's counter does
        return tok

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return count_with(self._counter, texts)

    def load(self) -> None:
        _ = self._encoder.weights

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with one_blas_thread():  # a query's small products: no wait on BLAS threads
            return self._shared(texts)


def fast_path_for(folder: Path | None) -> str:
    """Why a model folder cannot take the fast path ("" when it can be probed)."""
    if not fast_enabled():
        return f"{FAST_VARIABLE}=0"
    if folder is None:
        return "not a local model folder"
    return why_unsupported(folder)
