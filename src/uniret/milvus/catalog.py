"""uniret's catalog inside Milvus: which collections are complete exports, and where the alias points.

One small collection (params milvus.catalog) holds JSON records keyed by
- `collection:<name>`: written last by an export, once every row is in, indexed and loaded; a
  collection without this record is a partial export (killed midway) and nothing serves it;
- `alias:<alias>`: the collection serving reads. Moving it is one upsert of one row, atomic in
  Milvus, so a reader sees the old collection or the new one, never a mix.

Why a catalog and not only Milvus's own aliases: Milvus Lite implements no alias RPC (nor
collection properties, nor rename). On a server that has them the alias is also set natively
(`alter_alias`), so other clients can search `<alias>` directly; uniret reads the catalog.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from uniret.core.errors import EngineError
from uniret.milvus.client import engine_error, unimplemented

log = logging.getLogger("uniret.milvus")

KEY, VALUE, VECTOR = "key", "value", "_unused"  # Milvus 2.5 needs a vector field in every collection
VALUE_MAX = 65535


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Catalog:
    """The catalog collection `name` on `client` (created on first write)."""

    def __init__(self, client, name: str):
        self.client = client
        self.name = name

    def exists(self) -> bool:
        return bool(self.client.has_collection(self.name))

    def ensure(self) -> None:
        """Create and load the catalog collection when absent."""
        from pymilvus import DataType

        if self.exists():
            self.client.load_collection(self.name)  # a reopened Lite file has nothing loaded
            return
        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(KEY, DataType.VARCHAR, is_primary=True, max_length=512)
        schema.add_field(VALUE, DataType.VARCHAR, max_length=VALUE_MAX)
        schema.add_field(VECTOR, DataType.FLOAT_VECTOR, dim=2)
        index = self.client.prepare_index_params()
        index.add_index(VECTOR, index_type="FLAT", metric_type="L2")
        self.client.create_collection(self.name, schema=schema, index_params=index)
        self.client.load_collection(self.name)

    def get(self, key: str) -> dict[str, Any] | None:
        """The record under `key`, or None (also when the catalog does not exist yet)."""
        if not self.exists():
            return None
        self.client.load_collection(self.name)
        rows = self.client.query(self.name, filter=f'{KEY} == "{key}"', output_fields=[VALUE],
                                 consistency_level="Strong")
        return json.loads(rows[0][VALUE]) if rows else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Write (replace) the record under `key`: one row, atomically."""
        value = json.dumps(record, sort_keys=True)
        if len(value.encode()) > VALUE_MAX:
            raise EngineError(f"{self.name}: catalog record {key!r} is {len(value)} bytes, over {VALUE_MAX}")
        self.ensure()
        self.client.upsert(self.name, [{KEY: key, VALUE: value, VECTOR: [0.0, 0.0]}])

    def delete(self, key: str) -> None:
        if self.exists():
            self.client.delete(self.name, filter=f'{KEY} == "{key}"')

    # -- exports ---------------------------------------------------------------------------------

    def export_record(self, collection: str) -> dict[str, Any] | None:
        """The record of a complete export into `collection`, or None (absent, or partial)."""
        return self.get(f"collection:{collection}")

    def record_export(self, collection: str, record: dict[str, Any]) -> dict[str, Any]:
        """Mark `collection` complete (the export's last write)."""
        record = {**record, "collection": collection, "complete": True, "exported_at": _now()}
        self.put(f"collection:{collection}", record)
        return record

    def forget_export(self, collection: str) -> None:
        self.delete(f"collection:{collection}")

    # -- the alias -------------------------------------------------------------------------------

    def alias(self, alias: str) -> dict[str, Any] | None:
        """{"collection", "bundle_hash", "bundle_version", "previous", "switched_at"} or None."""
        return self.get(f"alias:{alias}")

    def switch_alias(self, alias: str, collection: str) -> dict[str, Any]:
        """Point `alias` at a complete export (EngineError for a partial or unknown one); returns the
        new alias record, whose `previous` names the collection it pointed at before."""
        record = self.export_record(collection)
        if record is None or not self.client.has_collection(collection):
            current = (self.alias(alias) or {}).get("collection")
            raise EngineError(f"{collection}: not a complete export (no record in Milvus collection {self.name}); "
                              f"the alias {alias} stays on {current or 'nothing'}")
        old = self.alias(alias)
        previous = old["collection"] if old else None
        new = {"collection": collection, "bundle_hash": record.get("bundle_hash"),
               "bundle_version": record.get("bundle_version"), "switched_at": _now(),
               "previous": previous if previous != collection else (old or {}).get("previous")}
        self.put(f"alias:{alias}", new)
        new["native"] = self._native_alias(alias, collection)
        log.info("milvus alias %s: %s -> %s (%s)", alias, previous, collection, new["native"])
        return new

    def _native_alias(self, alias: str, collection: str) -> str:
        """Mirror the alias into Milvus's own (best effort: Milvus Lite has none)."""
        try:
            try:
                self.client.alter_alias(collection, alias)
            except Exception as exc:  # noqa: BLE001 - an alias that does not exist yet is created
                if unimplemented(exc):
                    raise
                self.client.create_alias(collection, alias)
        except Exception as exc:  # noqa: BLE001 - the catalog record already moved serving
            if unimplemented(exc):
                return "catalog only: this Milvus implements no aliases (Milvus Lite)"
            log.warning("milvus: native alias %s not moved (%s); the catalog record was", alias, exc)
            return f"catalog only: native alias failed ({engine_error(alias, exc)})"
        return f"native alias {alias} -> {collection} too"
