"""Benchmarks (`uniret bench`): latency/QPS per retrieval mode, encoders, index sizes, top-N curve, HTTP."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "JSON_FILE": "report",
    "SECTIONS": "runner",
    "run_bench": "runner",
    "run_from_args": "runner",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
