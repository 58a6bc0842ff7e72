"""HTTP serving of a retrieval bundle: FastAPI app, hot-swappable searcher state, Prometheus metrics."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "create_app": "app",
    "settings_from_params": "settings",
    "BundleSource": "source",
    "bundle_loader": "source",
    "bundle_version": "source",
    "ServingState": "state",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
