"""Bundles in the registry: <registry>/bundles/<version>/, immutable once published.

Publishing copies the index stage's bundle into a temp folder inside the registry, adds the
registry's fields to its manifest.json (evaluation metrics, gate decision, lineage, version) and
renames the folder into place, so a bundle is either absent or complete.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from uniret.registry.errors import RegistryError
from uniret.registry.integrity import is_version_name, verified_bundle, write_checksums
from uniret.registry.layout import MANIFEST
from uniret.registry.pointer import BUNDLES, now_iso
from uniret.utils.files import atomic_write_json, hash_path, make_temp_dir

log = logging.getLogger("uniret.registry")

HASH_PREFIX = 8  # hex digits of the content hash in a generated version name
# a published bundle's evaluation, per query: EVALUATION_DIR/per_query/<system>/<dataset>.json (the
# evaluate stage's layout), so the report can bootstrap the candidate against production
EVALUATION_DIR = "evaluation"


def read_manifest(bundle_dir: str | Path) -> dict[str, Any]:
    """A bundle's manifest.json, with a clear error naming the file when absent or invalid."""
    path = Path(bundle_dir) / MANIFEST
    if not path.is_file():
        raise RegistryError(f"{path}: bundle manifest not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RegistryError(f"{path}: invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise RegistryError(f"{path}: manifest must be a JSON object")
    return data


def bundle_dir(root: str | Path, version: str) -> Path:
    """Folder of a published bundle; a clear error when the version is unknown."""
    path = Path(root) / BUNDLES / version
    if not path.is_dir():
        known = ", ".join(v["version"] for v in list_bundles(root)) or "none"
        raise RegistryError(f"{path}: no bundle {version!r} in the registry (known: {known})")
    return path


def find_by_hash(root: str | Path, content_hash: str) -> str | None:
    """The version of an already published bundle with this source content hash, if any."""
    for entry in list_bundles(root):
        if entry.get("bundle_hash") == content_hash:
            return entry["version"]
    return None


def publish(
    root: str | Path,
    source: str | Path,
    *,
    evaluation: dict[str, Any] | None,
    decision: dict[str, Any] | None,
    lineage: dict[str, Any],
    version: str | None = None,
    content_hash: str | None = None,
    attachments: dict[str, Path] | None = None,
) -> str:
    """Copy `source` into <root>/bundles/<version>/ atomically; return the version.

    The version defaults to `<UTC time>-<content hash prefix>`. An existing version is never
    overwritten (bundles are immutable; the rename refuses a non-empty target). `attachments`
    ({path in the bundle: folder}) are copied in too, checksummed with the rest, outside the
    content hash (e.g. the per-query scores of its evaluation, EVALUATION_DIR).
    """
    source, bundles = Path(source), Path(root) / BUNDLES
    verified_bundle(source, None, "not published")  # the index stage's checksums: a bundle damaged since
    manifest = read_manifest(source)
    content_hash = content_hash or hash_path(source)
    version = version or f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{content_hash[:HASH_PREFIX]}"
    if not is_version_name(version):
        raise RegistryError(f"invalid bundle version {version!r}: no '/' and no leading '.'")
    final = bundles / version
    if final.exists():
        raise RegistryError(f"{final}: bundle version {version!r} already exists (bundles are immutable)")
    bundles.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(bundles, f".tmp-{version}-")
    try:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        for dest, folder in (attachments or {}).items():
            shutil.copytree(folder, tmp / dest)
        manifest.update(
            version=version,
            published_at=now_iso(),
            bundle_hash=content_hash,
            evaluation=evaluation,
            gate=decision,
            lineage=lineage,
        )
        atomic_write_json(tmp / MANIFEST, manifest)
        write_checksums(tmp)  # serving and rollback verify the bundle against these before use
        try:
            tmp.rename(final)
        except OSError as exc:
            raise RegistryError(f"{final}: could not publish bundle {version!r}: {exc}") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("published bundle %s from %s", version, source)
    return version


def list_bundles(root: str | Path) -> list[dict[str, Any]]:
    """Summaries of every published bundle, oldest first (temp folders are ignored)."""
    bundles = Path(root) / BUNDLES
    out = []
    for path in sorted(bundles.iterdir()) if bundles.is_dir() else []:
        if path.name.startswith(".") or not path.is_dir():
            continue
        try:
            m = read_manifest(path)
        except RegistryError as exc:
            out.append({"version": path.name, "error": str(exc)})
            continue
        out.append({
            "version": path.name,
            "published_at": m.get("published_at"),
            "bundle_hash": m.get("bundle_hash"),
            "gate_passed": (m.get("gate") or {}).get("passed"),
            "parent": (m.get("lineage") or {}).get("parent"),
        })
    return sorted(out, key=lambda e: (e.get("published_at") or "", e["version"]))
