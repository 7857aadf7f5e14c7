"""One BLAS/OpenMP thread for the local models, set before numpy loads (the package's
__init__ calls `limit_blas_threads` first)."""

from __future__ import annotations

import ctypes
import os
import sys


def limit_blas_threads() -> None:
    """One BLAS/OpenMP thread: embedding already runs beside the event loop, and a
    multi-threaded BLAS on a small (2-core) box fights the event loop and stalls.

    Env vars only take effect before numpy loads its BLAS; if numpy is already loaded
    (pgvector imports it), set the OpenBLAS thread count at run time instead. An operator's
    explicit OPENBLAS_NUM_THREADS is respected. OPENBLAS_CORETYPE is never touched.
    """
    explicit = "OPENBLAS_NUM_THREADS" in os.environ
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if explicit or "numpy" not in sys.modules:
        return
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
        return
    except Exception:  # threadpoolctl not installed: fall back to OpenBLAS's own setter
        pass
    _set_openblas_threads(1)


def _set_openblas_threads(n: int) -> None:
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line and "/" in line}
    except OSError:
        return
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in (
            "scipy_openblas_set_num_threads64_",
            "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_",
            "openblas_set_num_threads",
        ):
            setter = getattr(lib, symbol, None)
            if setter is not None:
                setter(ctypes.c_int(n))
                break
