"""The manifest: compact canonical JSON with a fixed key order, and its rules."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from urna.errors import FormatError

PLACEHOLDER_MODEL_HASH = "sha256:" + "0" * 64
HASH_RE = re.compile(r"sha256:[0-9a-f]{64}")

REQUIRED_KEYS = (
    "format_version",
    "schema_version",
    "embedding_model",
    "embedding_dim",
    "n_chunks",
    "dtype",
    "metric",
    "score_type",
    "normalize",
    "index_type",
    "rerank_policy",
    "model_hash",
    "chunker_version",
    "capabilities",
)
CAPABILITY_KEYS = (
    "supports_exact",
    "supports_ann",
    "supports_bm25",
    "supports_citations",
    "supports_reproducible_build",
)
OPTIONAL_KEYS = (
    "title",
    "version",
    "created",
    "description",
    "authors",
    "license",
    "mrl_dim",
    "full_dim",
    "capabilities_ext",
)
CAPABILITY_EXT_KEYS = (
    "supports_multimodal",
    "graph_present",
    "graph_entities_present",
    "supports_catalog",
    "blobs_present",
)
CONTRACT_KEYS = ("metric", "score_type", "normalize", "index_type", "rerank_policy")

ALLOWED = {
    "dtype": ("float32", "float16", "int8", "int4"),
    "metric": ("ip",),
    "score_type": ("cosine", "hybrid_rrf"),
    "normalize": ("l2",),
    "index_type": ("exact", "hnsw", "hybrid"),
    "rerank_policy": ("none", "exact"),
}
REPRODUCIBLE_CREATED = "1970-01-01T00:00:00Z"


def dumps(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes, keys in the order the mapping holds them."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


MAX_JSON_DEPTH = 64


def strict_loads(text: str) -> Any:
    """Parse strict JSON: no NaN, no duplicate keys, nesting at most MAX_JSON_DEPTH deep, no
    lone surrogate (``"\\ud800"`` parses but can never be printed as UTF-8). ValueError else."""
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:  # iterative: a deep value must not exhaust the stack here either
        item, depth = stack.pop()
        if isinstance(item, str):
            _printable(item)
        elif isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
            if isinstance(item, dict):
                for key in item:
                    _printable(key)
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)
    return value


def _printable(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a string holds a lone surrogate (not valid Unicode)") from None


def loads_object(data: bytes) -> dict[str, Any]:
    """Parse strict JSON (see ``strict_loads``) that must be an object."""
    value = strict_loads(data.decode("utf-8"))
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def ordered(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest with its keys in canonical order: required, optional, then sorted extras."""
    out: dict[str, Any] = {}
    for key in REQUIRED_KEYS:
        if key in manifest:
            value = manifest[key]
            if key == "capabilities":
                value = {k: value[k] for k in CAPABILITY_KEYS if k in value} | {
                    k: value[k] for k in sorted(value) if k not in CAPABILITY_KEYS
                }
            out[key] = value
    for key in OPTIONAL_KEYS:
        if key in manifest and manifest[key] is not None:
            value = manifest[key]
            if key == "capabilities_ext":
                value = {k: value[k] for k in CAPABILITY_EXT_KEYS if k in value} | {
                    k: value[k] for k in sorted(value) if k not in CAPABILITY_EXT_KEYS
                }
            out[key] = value
    known = set(REQUIRED_KEYS) | set(OPTIONAL_KEYS)
    for key in sorted(manifest):
        if key not in known and manifest[key] is not None:
            out[key] = manifest[key]
    return out


def search_contract(manifest: Mapping[str, Any]) -> dict[str, Any]:
    return {key: manifest[key] for key in CONTRACT_KEYS}


def _bad(message: str) -> FormatError:
    return FormatError(message, check=8, section="manifest")


def _int(manifest: Mapping[str, Any], key: str) -> int:
    value = manifest[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(f"manifest {key} must be an integer, got {json.dumps(value)}")
    return value


def _nonempty_str(manifest: Mapping[str, Any], key: str) -> str:
    value = manifest[key]
    if not isinstance(value, str) or not value:
        raise _bad(f"manifest {key} must be a non-empty string, got {json.dumps(value)}")
    return value


def validate(manifest: Mapping[str, Any]) -> None:
    """Enforce the manifest rules of docs/format.md; raise FormatError (check 8) at the first."""
    for key in REQUIRED_KEYS:
        if key not in manifest:
            raise _bad(f"manifest is missing required key {key!r}")
    if _int(manifest, "format_version") != 1:
        raise _bad(f"manifest format_version must be 1, got {manifest['format_version']}")
    if _int(manifest, "schema_version") != 1:
        raise _bad(f"manifest schema_version must be 1, got {manifest['schema_version']}")
    _nonempty_str(manifest, "embedding_model")
    _nonempty_str(manifest, "chunker_version")
    if _int(manifest, "embedding_dim") <= 0:
        raise _bad(f"manifest embedding_dim must be > 0, got {manifest['embedding_dim']}")
    if _int(manifest, "n_chunks") <= 0:
        raise _bad(f"manifest n_chunks must be > 0, got {manifest['n_chunks']}")
    for key, allowed in ALLOWED.items():
        if manifest[key] not in allowed:
            raise _bad(
                f"manifest {key} must be one of {', '.join(allowed)}, "
                f"got {json.dumps(manifest[key])}"
            )
    model_hash = manifest["model_hash"]
    if not isinstance(model_hash, str) or not HASH_RE.fullmatch(model_hash):
        raise _bad(f"manifest model_hash must be sha256:<64 hex>, got {json.dumps(model_hash)}")
    caps = manifest["capabilities"]
    if not isinstance(caps, dict):
        raise _bad("manifest capabilities must be an object")
    for key in CAPABILITY_KEYS:
        if not isinstance(caps.get(key), bool):
            raise _bad(f"manifest capabilities.{key} must be true or false")
    ext = manifest.get("capabilities_ext")
    if ext is not None and not isinstance(ext, dict):
        raise _bad("manifest capabilities_ext must be an object")
    index_type = manifest["index_type"]
    if index_type in ("hnsw", "hybrid") and manifest["rerank_policy"] != "exact":
        raise _bad(f"manifest index_type {index_type} needs rerank_policy exact")
    if index_type == "hnsw" and not caps["supports_ann"]:
        raise _bad("manifest index_type hnsw needs capabilities.supports_ann")
    if index_type == "hybrid" and not caps["supports_bm25"]:
        raise _bad("manifest index_type hybrid needs capabilities.supports_bm25")
    for key in ("mrl_dim", "full_dim"):
        if key in manifest and (_int(manifest, key) <= 0):
            raise _bad(f"manifest {key} must be > 0, got {manifest[key]}")
