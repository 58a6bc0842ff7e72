"""faiss, imported with its loader's misleading "Could not load library with AVX2 support" quieted.

The faiss-cpu 1.15.1 wheel is a Dynamic Dispatch build: ONE `swigfaiss` module whose libfaiss.so
holds the generic, AVX2, AVX512 and AVX512-SPR kernels and picks one at run time
(`faiss.get_compile_options()` -> "OPTIMIZE DD AVX2"; `faiss.SIMDConfig.get_level_name()` -> "AVX2"
on these machines). faiss/loader.py still tries the per-ISA modules of older wheels first
(`swigfaiss_avx2`, absent from this wheel), logs that failure at INFO, then loads `swigfaiss`,
which dispatches to AVX2 anyway. Nothing to fix in the build; the message is silenced and the
level in use is recorded by the benchmarks (`simd_level`).
"""

from __future__ import annotations

import logging

logging.getLogger("faiss.loader").setLevel(logging.WARNING)

import faiss  # noqa: E402 - after the logger level is set

__all__ = ["faiss", "set_search_threads", "simd_level"]


def set_search_threads(threads: int) -> None:
    """Threads of one vector search, process-wide: faiss's OpenMP and numpy's BLAS (the exact flat
    search is a numpy product, E38). Serving sets 1: requests already run concurrently, and a
    multi-threaded product beside them only waits for cores."""
    from threadpoolctl import threadpool_limits

    faiss.omp_set_num_threads(threads)
    threadpool_limits(threads, user_api="blas")


def simd_level() -> str:
    """The SIMD level faiss dispatches to ("AVX2", "AVX512", ...), or its compile options on old builds."""
    config = getattr(faiss, "SIMDConfig", None)
    if config is not None and hasattr(config, "get_level_name"):
        return str(config.get_level_name())
    return faiss.get_compile_options()
