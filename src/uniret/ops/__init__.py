"""Operations around the DAG: the nightly retraining run and the comparison of recipes (each runs stages)."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "run_nightly": "nightly",
    "compare_recipes": "recipes_compare",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
