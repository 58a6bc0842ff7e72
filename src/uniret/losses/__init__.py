"""Training objectives, one per module, composed by weights (`compose.CompositeLoss`)."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "LossInputs": "base",
    "CompositeLoss": "compose",
    "build_composite": "compose",
    "needs": "compose",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
