"""Native libraries in one process: BLAS held to one thread only inside urna's own blocks,
and the float32 scan spread over urna's pool giving the product's scores."""

from __future__ import annotations

import threading

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from urna.index.scan import MIN_ROWS, float32_scores
from urna.native import one_blas_thread


def _blas_threads() -> set[int]:
    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def test_one_blas_thread_holds_inside_and_restores_the_callers_setting() -> None:
    with threadpool_limits(limits=2, user_api="blas"):
        outside = _blas_threads()
        with one_blas_thread():
            assert _blas_threads() <= {1}
            with one_blas_thread():  # nested: still one, and the outer block still holds it
                assert _blas_threads() <= {1}
            assert _blas_threads() <= {1}
            seen: list[set[int]] = []
            worker = threading.Thread(target=lambda: seen.append(_blas_threads()))
            worker.start()
            worker.join()
            assert seen == [_blas_threads()]  # the scan pool's threads run under it too
        assert _blas_threads() == outside  # the caller's setting is back


def test_the_float32_scan_in_blocks_gives_the_products_scores() -> None:
    rng = np.random.default_rng(3)
    for n in (1000, MIN_ROWS * 3 + 17):  # on the calling thread, and in blocks on the pool
        values = rng.standard_normal((n, 64)).astype(np.float32)
        q = rng.standard_normal(64).astype(np.float32)
        got = float32_scores(values, q)
        exact = values.astype(np.float64) @ q.astype(np.float64)
        assert got.dtype == np.float32 and got.shape == (n,)
        assert np.max(np.abs(got - exact)) <= 4 * 64 * 2.0**-24 * np.max(
            np.linalg.norm(values, axis=1)
        ) * np.linalg.norm(q)
