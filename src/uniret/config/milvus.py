"""The `milvus` section: serving a bundle from Milvus (`uniret export milvus`, `uniret serve --engine milvus`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# Milvus collection and alias names: a letter or underscore, then letters, digits, underscores
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
NATIVE_RANKERS = ("rrf", "weighted")


@dataclass
class MilvusConfig:
    """Where the engine is, how collections are named, and how exports and searches are batched."""

    # a Milvus server (http://host:19530, a cluster's proxy service) or a local Milvus Lite file (./x.db);
    # null: no engine (export and serve name one with --uri)
    uri: str | None = None
    token_env: str = "MILVUS_TOKEN"  # env var holding the cluster's token ("user:password"); unset: none
    timeout_s: float = 30.0  # one RPC (connect, search, insert batch)
    collection_prefix: str = "uniret"  # collections <prefix>_<bundle content hash prefix>
    alias: str = "uniret_production"  # what serving reads; promotion and rollback move it
    catalog: str = "uniret_catalog"  # uniret's record of complete exports and of the alias (see milvus/catalog.py)
    # bundle: the dense index type the bundle records (flat -> FLAT, hnsw -> HNSW, ivfpq -> IVF_PQ);
    # flat: exact search whatever the bundle's type (the parity checks); Milvus Lite refuses HNSW and
    # IVF_PQ, the export then falls back to FLAT and records why
    dense_index: Literal["bundle", "flat"] = "bundle"
    insert_batch: int = 512  # rows per insert request (a row of 384 floats + ~250 impacts is ~5 KB)
    search_batch: int = 64  # queries per search request
    tie_slack: int = 64  # hits fetched beyond k so that ties at the k-th are broken by doc id, as in-process
    export_on_promote: bool = False  # the promote stage exports the candidate and moves the alias (needs uri)
    # Milvus's own hybrid_search, offered beside uniret's fusion as extra modes <mode>_native_<ranker>
    # (its WeightedRanker normalises with arctan, not min-max: docs/milvus.md gives the measured difference)
    native_rankers: list[str] = field(default_factory=list)

    def validate(self) -> None:
        for name in ("collection_prefix", "alias", "catalog"):
            if not NAME.match(getattr(self, name)):
                raise ValueError(f"{name}: {getattr(self, name)!r} is not a Milvus name (letters, digits, _)")
        for name in ("timeout_s", "insert_batch", "search_batch"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.tie_slack < 0:
            raise ValueError(f"tie_slack must be >= 0, got {self.tie_slack}")
        bad = [r for r in self.native_rankers if r not in NATIVE_RANKERS]
        if bad:
            raise ValueError(f"native_rankers: unknown {bad}; choose from {', '.join(NATIVE_RANKERS)}")
