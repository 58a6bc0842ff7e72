"""Export: ONNX graphs of the query and document encoders, and their parity with torch."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "export_encoders": "onnx",
    "export_bundle": "opensearch",
    "check_parity": "parity",
    "quantize_query_encoder": "quantize",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
