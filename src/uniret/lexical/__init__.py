"""Lucene through pyserini: JVM setup, BM25 indexes and search, impact (learned-sparse) indexes."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "Bm25Searcher": "bm25",
    "build_bm25_index": "bm25",
    "ImpactSearcher": "impact",
    "build_impact_index": "impact",
    "ensure_jvm": "jvm",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
