"""Promotion and rollback on Milvus: the registry's pointer flip moves the Milvus alias too.

`engine_hook(cfg)` (params milvus.export_on_promote) connects, and returns the registry's
`on_change`: export the bundle now production if its collection is missing or partial (a no-op
when promotion exported it before the flip, as the promote stage does), then move the alias.
"""

from __future__ import annotations

import json
from pathlib import Path

from uniret.config.milvus import MilvusConfig


def engine_hook(cfg: MilvusConfig):
    """(client, on_change) when params ask promotion to move the Milvus alias, else (None, None)."""
    if not cfg.export_on_promote:
        return None, None
    from uniret.milvus.bundles import publish_bundle
    from uniret.milvus.client import connect_configured

    client = connect_configured(cfg)  # EngineError now, before anything changes, when unreachable

    def on_change(bundle: Path) -> str:
        moved = publish_bundle(client, cfg, bundle, progress=False)["alias"]
        return f"milvus alias {cfg.alias} -> {moved['collection']} (was {moved['previous']}); {moved['native']}"

    return client, on_change


def export_before_flip(client, cfg: MilvusConfig, bundle: Path) -> str:
    """Export the candidate before the pointer flip (the slow part, outside the registry lock)."""
    from uniret.milvus.bundles import export_bundle

    return json.dumps(export_bundle(client, cfg, bundle, progress=False).summary())
