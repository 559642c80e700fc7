"""The query embedder: the numpy encoder where it was checked against the reference, else the
reference itself (sentence-transformers).

A cold text query (``ask``, ``retrieve``, ``search-text``, ``find``, a server's first query)
embeds one short text. Importing torch and sentence-transformers for it costs seconds; the
numpy encoder (``numpy_bert``) reads the same model files and costs milliseconds. It is used
for a model folder only when a probe record in the cache says that, on fixed probe
sentences, its vectors matched the reference's float32 vectors within ``MIN_COSINE`` for
the same model hash. The probe runs wherever the reference is loaded anyway (a build, or a
query that fell back), once per model and cache. A probe that drifts is recorded, and that
model keeps the reference path.

``URNA_FAST_QUERY=0`` turns the numpy path off.
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

from urna.embed.base import cache_dir
from urna.embed.model_hash import model_files, model_hash
from urna.embed.numpy_bert import NumpyBert, why_unsupported
from urna.errors import ModelError, UrnaError
from urna.format.atomic import atomic_writer

FAST_VARIABLE = "URNA_FAST_QUERY"
PROBE_VERSION = "urna-query-probe/1"
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


def _probe_path(model_hash_: str) -> Path:
    return cache_dir() / "query-probe" / (model_hash_.removeprefix("sha256:") + ".json")


def probe_record(model_hash_: str) -> dict[str, Any] | None:
    try:
        record = json.loads(_probe_path(model_hash_).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("probe") != PROBE_VERSION:
        return None
    if record.get("model_hash") != model_hash_:
        return None
    return record


def compare(reference: np.ndarray, ours: np.ndarray) -> float:
    """The smallest cosine between paired rows (unit vectors)."""
    if reference.shape != ours.shape:
        return -1.0
    return float(np.min(np.sum(reference.astype(np.float64) * ours, axis=1)))


def run_probe(folder: Path, model_hash_: str, reference: Any, max_tokens: int) -> dict[str, Any]:
    """Compare the numpy encoder with ``reference(texts)`` (float32 unit vectors from the
    reference stack) on the probe sentences, and record the outcome in the cache."""
    try:
        ours = NumpyBert(folder, max_tokens).embed(PROBES)
        cosine = compare(np.asarray(reference(list(PROBES)), dtype=np.float32), ours)
    except (ModelError, ValueError, IndexError, KeyError, TypeError) as exc:  # files it misreads
        cosine, note = -1.0, f"{type(exc).__name__}: {exc}"
    else:
        note = ""
    record = {
        "probe": PROBE_VERSION,
        "model_hash": model_hash_,
        "min_cosine": cosine,
        "ok": cosine >= MIN_COSINE,
        **({"note": note} if note else {}),
    }
    _write_json(_probe_path(model_hash_), record)
    return record


class Coalescer:
    """Concurrent ``embed`` calls share passes: whoever finds no pass running runs one for
    everything queued, and keeps going while more arrives; the others wait for theirs. One
    caller alone waits for nothing. Reading the weights once for many queries is what
    makes a busy server faster (the pass is bound by memory, not arithmetic)."""

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
        encoded = self._counter.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encoded]

    def load(self) -> None:
        _ = self._encoder.weights

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._shared(texts)


def fast_path_for(folder: Path | None) -> str:
    """Why a model folder cannot take the fast path ("" when it can be probed)."""
    if not fast_enabled():
        return f"{FAST_VARIABLE}=0"
    if folder is None:
        return "not a local model folder"
    return why_unsupported(folder)
