"""Integrity end to end (issue 12): promote records a sha256 of every bundle file, rollback and
`uniret registry verify` check them; a damaged pointer is refused with its position and left as it
was; promotions and rollbacks racing from several processes keep the registry valid."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from uniret.registry.errors import RegistryError
from uniret.registry.integrity import SUMS, verify_bundle
from uniret.registry.pointer import POINTER, read_pointer
from uniret.registry.promotion import promote, rollback


def _bundle(tmp: Path, name: str, payload: str) -> Path:
    path = tmp / "src" / name
    (path / "sub").mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"metrics": {}}))
    (path / "dense.index").write_text(payload)
    (path / "sub" / "impacts.bin").write_bytes(payload.encode() * 3)
    return path


def _promote(root: Path, src: Path, version: str):
    return promote(root, src, evaluation=None, decision={"passed": True}, lineage={}, version=version, dvc_push=False)


@pytest.fixture
def registry(tmp_path):
    root = tmp_path / "registry"
    _promote(root, _bundle(tmp_path, "a", "AAA"), "v1")
    _promote(root, _bundle(tmp_path, "b", "BBB"), "v2")
    return root


def _verify(cli, repo_root, root):
    return cli("registry", "verify", "--params", str(repo_root / "params.yaml"), "--registry", str(root))


def test_promote_records_every_file_and_verify_passes(registry, cli, repo_root):
    sums = (registry / "bundles" / "v1" / SUMS).read_text().splitlines()
    assert sorted(line.split("  ", 1)[1] for line in sums) == ["dense.index", "manifest.json", "sub/impacts.bin"]
    assert verify_bundle(registry / "bundles" / "v1") == 3
    r = _verify(cli, repo_root, registry)
    assert r.returncode == 0 and "v1: ok (3 files)" in r.stdout and "registry: ok" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("damage", ["changed", "missing", "extra", "sums removed"])
def test_rollback_refuses_a_damaged_previous_bundle_and_changes_nothing(registry, damage, cli, repo_root, snapshot):
    v1 = registry / "bundles" / "v1"
    if damage == "changed":
        (v1 / "sub" / "impacts.bin").write_bytes(b"flipped")
    elif damage == "missing":
        (v1 / "dense.index").unlink()
    elif damage == "extra":
        (v1 / "planted.so").write_bytes(b"\x7fELF")
    else:
        (v1 / SUMS).unlink()
    before = snapshot(registry)
    with pytest.raises(RegistryError, match="v1"):
        rollback(registry, dvc_push=False)
    assert snapshot(registry) == before and read_pointer(registry)["version"] == "v2"
    r = _verify(cli, repo_root, registry)
    assert r.returncode == 1 and "v1: FAILED" in r.stdout and "registry: FAILED verification" in r.stdout, r.stdout
    assert "v2: ok" in r.stdout and "names 'v1', which fails verification" in r.stdout  # v1 is in the history


POINTERS = {
    "truncated": (b'{"version": "v2", "bundle": "bundl', "line 1 column 29 (char 28)"),
    "empty": (b"", "line 1 column 1 (char 0)"),
    "not utf-8": (b'{"version": "\xff"}', "not UTF-8"),
    "not an object": (b"[1, 2]", "field 'version' missing"),
    "version not a string": (b'{"version": 3}', "field 'version' missing"),
}


@pytest.mark.parametrize("case", sorted(POINTERS))
@pytest.mark.parametrize("command", ["list", "verify", "rollback"])
def test_a_damaged_pointer_is_refused_with_its_position_and_left_as_it_was(registry, case, command, cli, repo_root,
                                                                          snapshot):
    content, needle = POINTERS[case]
    (registry / POINTER).write_bytes(content)
    before = snapshot(registry)
    args = ["rollback", "--no-dvc-push"] if command == "rollback" else ["registry", command]
    r = cli(*args, "--params", str(repo_root / "params.yaml"), "--registry", str(registry))
    assert r.returncode == 1, r.stdout + r.stderr
    assert needle in r.stdout + r.stderr and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert snapshot(registry) == before


def test_a_pointer_naming_a_path_outside_the_registry_fails_verify(registry, cli, repo_root):
    (registry / POINTER).write_text(json.dumps({"version": "v2", "bundle": "../../etc", "history": []}))
    r = _verify(cli, repo_root, registry)
    assert r.returncode == 1 and "points at '../../etc'" in r.stdout, r.stdout


RACER = """
import json, sys
from pathlib import Path
from uniret.registry.errors import RegistryError
from uniret.registry.promotion import promote, rollback
root, src, role = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
outcomes = []
for i in range(6):
    try:
        if role == "promote":
            r = promote(root, src / f"b{i % 3}", evaluation=None, decision={"passed": True}, lineage={},
                        dvc_push=False)
        else:
            r = rollback(root, dvc_push=False)
        outcomes.append(r.version)
    except RegistryError as exc:  # e.g. nothing left to roll back to: a clean refusal
        outcomes.append("refused")
print(json.dumps(outcomes))
"""


def test_concurrent_promotes_and_rollbacks_keep_the_registry_valid(tmp_path, cli, repo_root):
    root = tmp_path / "registry"
    src = tmp_path / "src"
    for i in range(3):
        _bundle(tmp_path, f"b{i}", f"payload-{i}")
    _promote(root, src / "b0", "seed")
    roles = ["promote", "rollback", "promote", "rollback"]
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(root), str(src), role], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for role in roles]
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in results]
    assert sum(len(json.loads(out)) for out, _ in results) == 6 * len(roles)
    pointer = read_pointer(root)  # valid JSON, names a published bundle that verifies
    verify_bundle(root / pointer["bundle"])
    r = _verify(cli, repo_root, root)
    assert r.returncode == 0, r.stdout
    assert not [p.name for p in root.rglob("*") if p.name.startswith((".tmp-", f".{POINTER}"))]
