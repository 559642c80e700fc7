"""Where a transformer embeds: ``auto`` (a GPU when torch sees one, else the CPU), ``cpu``,
``cuda`` or ``mps``.

``urna build --device`` and ``urna serve --device`` set ``URNA_EMBED_DEVICE`` for the
process (and so for the build's worker processes); the default is ``auto``. A device
asked for that torch cannot see is an error, never a silent fall back to the CPU. A
vector's bits depend on the device's arithmetic, so a file built off the CPU records its
device (``embed_device``), and the embedding cache keys hold it. Static models and the
numpy query encoder always run on the CPU.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from urna.errors import ModelError

DEVICE_VARIABLE = "URNA_EMBED_DEVICE"
DEVICES = ("auto", "cpu", "cuda", "mps")
GPUS = ("cuda", "mps")


def asked_device() -> str:
    """The device asked for (``auto`` unless ``URNA_EMBED_DEVICE`` says otherwise)."""
    asked = os.environ.get(DEVICE_VARIABLE, "auto").strip().lower() or "auto"
    if asked not in DEVICES:
        raise ModelError(f"{DEVICE_VARIABLE}={asked!r}: expected {', '.join(DEVICES)}")
    return asked


def _sees(torch: Any, device: str) -> bool:
    if device == "cuda":
        return bool(torch.cuda.is_available())
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def resolved_device(asked: str, torch: Any) -> str:
    """``asked`` as a torch device name: ``auto`` becomes cuda, mps or cpu, whichever torch
    sees first; a GPU it does not see raises a ``ModelError`` saying so."""
    if asked == "auto":
        return next((d for d in GPUS if _sees(torch, d)), "cpu")
    if asked in GPUS and not _sees(torch, asked):
        name = "CUDA" if asked == "cuda" else "MPS (Apple GPU)"
        raise ModelError(
            f"{asked} requested but torch sees no {name} device "
            "(use --device cpu, or auto to take a GPU only when there is one)"
        )
    return asked


def gpu_may_be_present() -> bool:
    """Whether ``auto`` could find a GPU, asked without importing torch: an NVIDIA driver's
    device nodes on Linux, or a Mac (MPS). Where this says no, ``auto`` is the CPU, and a
    CPU-only process need not pay for torch's import to learn it."""
    if sys.platform == "darwin":
        return True
    return Path("/dev/nvidia0").exists() or Path("/proc/driver/nvidia/gpus").is_dir()


def device_of(embedder: object) -> str:
    """The device an embedder's vectors come from (``cpu`` for all but transformers)."""
    return str(getattr(embedder, "device", "cpu"))


def arithmetic(precision: str, device: str) -> str:
    """Precision and device as one key part: the precision alone on the CPU (keys and
    recipes as before), ``float32@cuda`` elsewhere."""
    return precision if device == "cpu" else f"{precision}@{device}"
