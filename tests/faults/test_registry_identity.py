"""issue 57 (minor): a registry bundle is what its folder says it is, and a cut checksum list is named.

A bundle copied under another version (its manifest still names the first) used to pass `uniret registry
verify`, and serving then reported the manifest's version in /readyz; a SHA256SUMS with its last lines
cut was reported as files "not recorded" without naming SHA256SUMS."""

from __future__ import annotations

import json
import shutil

import pytest

from uniret.registry.integrity import SUMS, IntegrityError, verified_bundle, verify_published
from uniret.registry.promotion import promote
from uniret.registry.verify import verify_registry


@pytest.fixture
def registry(tmp_path):
    source = tmp_path / "bundle"
    source.mkdir()
    (source / "manifest.json").write_text("{}")
    (source / "dense.faiss").write_bytes(b"\x01" * 64)
    (source / "docids.json").write_text(json.dumps(["d1", "d2"]))
    root = tmp_path / "registry"
    promote(root, source, evaluation=None, decision={"passed": True}, lineage={}, version="v1", dvc_push=False)
    return root


def test_a_bundle_copied_under_another_version_fails_verification_everywhere(registry):
    shutil.copytree(registry / "bundles" / "v1", registry / "bundles" / "v2")  # checksums still match
    report = verify_registry(registry)
    assert report.bundles["v1"].startswith("ok") and not report.ok
    assert "manifest.json names version 'v1', not its folder's 'v2'" in report.bundles["v2"], report.bundles
    for check in (lambda: verify_published(registry / "bundles" / "v2"),
                  lambda: verified_bundle(registry / "bundles" / "v2", registry, "not exported")):
        with pytest.raises(IntegrityError, match="names version 'v1'"):
            check()

    from uniret.serving.source import BundleSource

    load = BundleSource(registry_root=registry).verified_loader(lambda path: path)
    with pytest.raises(IntegrityError, match="names version 'v1'"):
        load(registry / "bundles" / "v2")  # serving keeps its old bundle and reports this
    assert load(registry / "bundles" / "v1") == registry / "bundles" / "v1"


def test_a_cut_checksum_list_is_named(registry):
    sums = registry / "bundles" / "v1" / SUMS
    lines = sums.read_text().splitlines(keepends=True)
    sums.write_text("".join(lines[:-1]))  # cut at a line end: one file no longer listed
    report = verify_registry(registry)
    assert f"not recorded in {SUMS}" in report.bundles["v1"] and "cut short" in report.bundles["v1"], report.bundles
    sums.write_text("".join(lines)[:-10])  # cut inside the last line
    assert f"{SUMS} truncated" in verify_registry(registry).bundles["v1"]
