"""The `opensearch` section: how `uniret export opensearch` lays a bundle out for OpenSearch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass
class OpenSearchExportConfig:
    """Index naming, fields, k-NN method and bulk file size of the OpenSearch export.

    The HNSW graph parameters default to the bundle's own `retrieval.dense` settings (hnsw_m,
    hnsw_ef_construction, hnsw_ef_search) so the engine's graph matches what the bundle measured.
    """

    index_prefix: str = "uniret"  # index name: <prefix>-<bundle version>
    alias: str = "uniret-production"  # the alias serving reads; promotion moves it (alias_actions.json)
    search_pipeline: str = "uniret-hybrid"
    dense_field: str = "dense"
    sparse_field: str = "sparse"
    text_field: str = "text"  # documents' text (with --corpus): hybrid_fast's BM25 clause
    knn_engine: Literal["faiss", "lucene"] = "faiss"  # both support innerproduct with HNSW
    number_of_shards: int = 1
    number_of_replicas: int = 1
    knn_k: int = 100  # candidates of the k-NN clause (the normalization processor fuses the top of each clause)
    bulk_docs_per_file: int = 5000  # documents per bulk NDJSON file (OpenSearch advises 5-15 MB per request)

    def validate(self) -> None:
        for name in ("number_of_shards", "knn_k", "bulk_docs_per_file"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.number_of_replicas < 0:
            raise ValueError(f"number_of_replicas must be >= 0, got {self.number_of_replicas}")
        for name in ("index_prefix", "alias", "search_pipeline", "dense_field", "sparse_field", "text_field"):
            value = getattr(self, name)
            if not value or value != value.lower() or any(c in value for c in ' "*\\<|,>/?'):
                raise ValueError(f"{name}: {value!r} is not a valid lowercase OpenSearch name")
