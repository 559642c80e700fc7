"""The model gate: a text query is embedded only by the model that built the file."""

from __future__ import annotations

from typing import Any

from urna.embed.base import Embedder
from urna.errors import ModelGateError
from urna.format.manifest import PLACEHOLDER_MODEL_HASH


def check_gate(embedder: Embedder, manifest: dict[str, Any]) -> None:
    """Name, then dimension, then model hash must match; the placeholder hash never passes."""
    expected_name = manifest["embedding_model"]
    if embedder.name != expected_name:
        raise ModelGateError(
            f"model mismatch: the file was built with {expected_name!r}, "
            f"the query embedder is {embedder.name!r}"
        )
    if embedder.dim != manifest["embedding_dim"]:
        raise ModelGateError(
            f"dim mismatch: the file has {manifest['embedding_dim']}-dimension vectors, "
            f"the embedder {embedder.name} gives {embedder.dim}"
        )
    expected_hash = manifest["model_hash"]
    if expected_hash == PLACEHOLDER_MODEL_HASH:
        raise ModelGateError(
            f"model_hash mismatch: the file records the placeholder hash {expected_hash}, so no "
            f"embedder can be trusted to match it (the embedder has {embedder.model_hash}); "
            "rebuild the file with `urna build` so it records the real model hash"
        )
    if embedder.model_hash != expected_hash:
        raise ModelGateError(
            f"model_hash mismatch: the file was built with {expected_hash}, the embedder "
            f"{embedder.name} has {embedder.model_hash}; rebuild the file with this model, or "
            "pass --model-path with the model files that built it"
        )
