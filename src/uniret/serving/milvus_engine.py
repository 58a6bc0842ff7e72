"""Serving with Milvus behind the same HTTP API (`uniret serve --engine milvus --uri ...`).

- Where the bundle comes from: with a registry, the Milvus alias decides (its catalog record names
  the bundle content it serves, found in the registry by content hash), so promotion and rollback,
  which move the alias, move serving: the pointer watcher and /admin/reload read the alias as they
  read production.json. With --bundle, that bundle and its own collection.
- What a loaded bundle is: its query side (encoders, doc ids, learned weights, BM25 analyzer) from
  the bundle folder, every index structure in its Milvus collection (uniret.milvus.bundles).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniret.config.milvus import MilvusConfig
from uniret.core.errors import EngineError
from uniret.retrieval.base import Searcher
from uniret.serving.source import BundleSource, SourceError, offered_modes, published_path

log = logging.getLogger("uniret.serving")


@dataclass
class AliasSource(BundleSource):
    """A registry whose production bundle is the one the Milvus alias points at."""

    client: Any = None
    milvus: MilvusConfig | None = None

    def production(self) -> tuple[Path, str] | None:
        """(bundle folder, version) of the alias's collection; None before any alias switch."""
        from uniret.milvus.catalog import Catalog
        from uniret.registry.bundles import find_by_hash

        if self.registry_root is None:
            return super().production()
        try:
            record = Catalog(self.client, self.milvus.catalog).alias(self.milvus.alias)
        except Exception as exc:  # noqa: BLE001 - an unreachable engine: the live bundle keeps serving
            raise SourceError(f"milvus alias {self.milvus.alias}: cannot read it ({exc})") from exc
        if record is None:
            return None
        version = find_by_hash(self.registry_root, record.get("bundle_hash"))
        if version is None:
            raise SourceError(f"milvus alias {self.milvus.alias} serves bundle {record.get('bundle_version')!r} "
                              f"(content {str(record.get('bundle_hash'))[:12]}), which registry {self.registry_root} "
                              "does not hold")
        return published_path(self.registry_root, f"bundles/{version}"), version

    def resolve(self, requested: str | None = None, expected_version: str | None = None) -> tuple[Path, str]:
        if not requested and self.registry_root is not None and self.production() is None:
            raise SourceError(f"milvus alias {self.milvus.alias}: not set yet (promote with milvus.export_on_promote, "
                              "or `uniret export milvus --switch-alias`)")
        return super().resolve(requested, expected_version)

    def describe(self) -> str:
        where = f"registry {self.registry_root}, alias {self.milvus.alias}" if self.registry_root is not None \
            else f"bundle {self.bundle}"
        return f"{where} on Milvus {self.milvus.uri}"


def alias_source(source: BundleSource, client, milvus: MilvusConfig) -> AliasSource:
    """`source` with the Milvus alias in place of production.json."""
    return AliasSource(registry_root=source.registry_root, bundle=source.bundle, client=client, milvus=milvus)


def milvus_loader(client, milvus: MilvusConfig, onnx_threads: int | None, batch_max: int = 1,
                  batch_wait_ms: float = 0.0, timeout_s: float | None = None, batch_workers: int = 1,
                  modes: str = "all", default_mode: str | None = None):
    """A ServingState loader: {mode: Searcher} of a bundle folder whose structures are in Milvus."""

    def load(path: Path) -> dict[str, Searcher]:
        from uniret.milvus.bundles import milvus_searchers
        from uniret.retrieval.bundle import built_retrieval, read_bundle_manifest
        from uniret.serving.batcher import BatchingQueryEncoder

        manifest = read_bundle_manifest(path)
        wanted = offered_modes(built_retrieval(manifest, Path(path)).modes, modes, default_mode,
                               (manifest.get("model") or {}).get("serve_mode"))
        wrap = None
        if batch_max > 1:
            def wrap(encoder):
                return BatchingQueryEncoder(encoder, batch_max, batch_wait_ms / 1000.0, timeout_s, batch_workers)
        try:
            return milvus_searchers(client, milvus, path, modes=wanted, threads=onnx_threads, encoder=wrap)
        except EngineError:
            raise
        except Exception as exc:  # noqa: BLE001 - the engine's own errors, named
            raise EngineError(f"{milvus.uri}: {type(exc).__name__}: {exc}") from exc

    return load
