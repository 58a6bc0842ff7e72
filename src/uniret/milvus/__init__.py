"""Milvus as the serving engine: export a bundle into a collection, move the alias, search it with
uniret's own searchers and fusion (docs/milvus.md)."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "export_bundle": "bundles",
    "milvus_searchers": "bundles",
    "publish_bundle": "bundles",
    "switch_alias": "bundles",
    "Catalog": "catalog",
    "connect": "client",
    "connect_configured": "client",
    "Exporter": "export",
    "ExportSource": "export",
    "open_collection": "search",
    "milvus_corpus_index": "search",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
