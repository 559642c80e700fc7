"""Native libraries that share one process: the load order that keeps them apart, and BLAS
on the calling thread for a query's products.

**Load order.** usearch 2.26's extension carries its own copy of the C++ runtime. ONNX
Runtime loaded after it in the same process crashes at import (a segmentation fault in the
runtime's locale code, seen on Linux x86-64): an int8 build that opens an index first, or
a server that embeds new documents in int8, would hit it. With the system's ``libstdc++`` loaded
globally before usearch, both libraries share its locale tables and either may load first
(``tests/test_int8.py``). Loading a library already mapped costs microseconds.

**BLAS threads.** OpenBLAS splits a product of a few hundred thousand values over its own
threads and waits for all of them. On a machine whose other cores are busy, that wait is a
scheduler time slice: a 5,000 x 384 product measured 8 ms with two BLAS threads against
0.09 ms with one, while another process kept the second core busy. A query's products are
memory-bound, so one thread loses little on an idle machine, and urna's scans spread large
matrices over its own pool (``index/scan.py``), where an idle thread takes the next block
instead of waiting. ``one_blas_thread()`` limits BLAS to one thread for a block's duration
and restores what it was (threadpoolctl, about 6 µs): a program that uses numpy itself keeps
its own setting outside urna's calls. The OpenBLAS numpy ships honours the setting
when the main thread makes it (a CLI's query, a program's; urna's scan pool then runs
under it); made from another thread (a server's request threads) it changes nothing there
(seen with numpy 2's scipy-openblas), and BLAS keeps its own threads.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

_shared = False


def share_cxx_runtime() -> None:
    """Load the system's C++ runtime globally, before usearch (Linux; once)."""
    global _shared
    if _shared or sys.platform != "linux" or "usearch.compiled" in sys.modules:
        return
    name = ctypes.util.find_library("stdc++")
    if name:
        with contextlib.suppress(OSError):
            ctypes.CDLL(name, mode=os.RTLD_GLOBAL)
            _shared = True


def onnxruntime_may_load() -> bool:
    """Whether ONNX Runtime can load in this process without crashing it."""
    return (
        "onnxruntime" in sys.modules
        or "usearch.compiled" not in sys.modules
        or _shared
        or sys.platform != "linux"
    )


_controller: Any = None
_lock = threading.Lock()
_depth = 0  # nested or concurrent blocks: the limit is set by the first, lifted by the last
_saved: list[tuple[Any, int]] = []


def _libraries() -> list[Any]:
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a base dependency
            _controller = False
            return []
        _controller = ThreadpoolController().select(user_api="blas")
    return list(_controller.lib_controllers) if _controller else []


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    global _depth
    with _lock:
        if _depth == 0:
            _saved[:] = [(lib, lib.get_num_threads()) for lib in _libraries()]
            for lib, threads in _saved:
                if threads != 1:
                    lib.set_num_threads(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for lib, threads in _saved:
                    if threads != 1:
                        lib.set_num_threads(threads)
