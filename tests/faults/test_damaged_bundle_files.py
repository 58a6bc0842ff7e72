"""`uniret evaluate --bundle` on a damaged bundle (issue 33): each truncated or corrupted file (faiss,
ONNX, JSON, npz, Lucene, checksums) is one line naming the file and what is wrong, exit 1, nothing
written; the traceback only with -v. A registry bundle is checked against its SHA256SUMS first."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from uniret.cli import main
from uniret.core.errors import InputFileError

# file of the bundle -> what the message says it should have been
DAMAGED = {
    "dense.faiss": "not a readable faiss index (truncated or corrupted?)",
    "dense.npy": "not a readable vector file (.npy, float32) (truncated or corrupted?)",
    "onnx/query.onnx": "not a readable ONNX model (truncated or corrupted?)",
    "onnx/doc.onnx": "not a readable ONNX model (truncated or corrupted?)",
    "impacts.npz": "not a readable impacts matrix (.npz) (truncated or corrupted?)",
    "docids.json": "invalid JSON",
    "manifest.json": "invalid JSON",
}


def _damaged_copy(bundle: Path, dest: Path, rel: str, checksums: bool = False) -> Path:
    """`bundle` as links to its files, but `rel` a real copy cut to half its length; without the
    index stage's SHA256SUMS unless `checksums` (a hand-made bundle: each reader names what it finds)."""
    shutil.copytree(bundle, dest, copy_function=os.symlink)
    if not checksums:
        (dest / "SHA256SUMS").unlink()
    target = dest / rel
    content = (bundle / rel).read_bytes()
    target.unlink()
    target.write_bytes(content[: len(content) // 2])
    return target


def _evaluate(params: Path, data: Path, bundle: str, out: Path, *flags: str) -> int:
    return main([*flags, "evaluate", "--params", str(params), "--profile", "tiny", "--data", str(data),
                 "--datasets", "scifact", "--bundle", bundle, "--out", str(out)])


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("uniret evaluate: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("rel", sorted(DAMAGED))
def test_a_truncated_bundle_file_is_one_line_naming_it(rel, tiny_bundle, tmp_path, small_data, params_file, capsys):
    damaged = _damaged_copy(tiny_bundle, tmp_path / "bundle", rel)
    out = tmp_path / "out"
    assert _evaluate(params_file(), small_data, str(tmp_path / "bundle"), out) == 1
    line = _error_line(capsys.readouterr().err)
    assert f"{damaged}" in line and DAMAGED[rel] in line, line
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_a_damaged_lucene_index_is_one_error_naming_its_folder(tiny_bundle, tmp_path):
    from uniret.retrieval.lexical import LuceneImpactIndex

    files = sorted((tiny_bundle / "impact").iterdir(), key=lambda p: p.stat().st_size)
    _damaged_copy(tiny_bundle, tmp_path / "bundle", f"impact/{files[-1].name}")
    with pytest.raises(InputFileError, match=r"impact: not a readable Lucene impact index .*truncated") as err:
        LuceneImpactIndex(tmp_path / "bundle" / "impact", [], [], 100.0).top_k(["q"], None, 10)
    assert str(tmp_path / "bundle" / "impact") in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("rel", ["onnx/query.onnx", "dense.faiss"])
def test_the_index_stages_checksums_name_a_damaged_file_before_any_work(rel, tiny_bundle, tmp_path, small_data,
                                                                        params_file, capsys):
    _damaged_copy(tiny_bundle, tmp_path / "bundle", rel, checksums=True)
    out = tmp_path / "out"
    assert _evaluate(params_file(), small_data, str(tmp_path / "bundle"), out) == 1
    line = _error_line(capsys.readouterr().err)
    assert f"{tmp_path / 'bundle'}: bundle bundle: failed verification (changed: {rel})" in line, line
    assert "not evaluated" in line and not out.exists()


def test_with_v_the_traceback_is_shown(tiny_bundle, tmp_path, small_data, params_file):
    _damaged_copy(tiny_bundle, tmp_path / "bundle", "dense.faiss")
    with pytest.raises(InputFileError, match="dense.faiss: not a readable faiss index"):
        _evaluate(params_file(), small_data, str(tmp_path / "bundle"), tmp_path / "out", "-v")


@pytest.mark.parametrize("damage", ["changed", "sums truncated"])
def test_a_registry_bundle_is_verified_against_its_checksums(damage, tiny_bundle, tmp_path, small_data, params_file,
                                                             capsys):
    from uniret.registry.integrity import SUMS, write_checksums
    from uniret.registry.pointer import point_to

    params = params_file()  # registry.root: <tmp_path>/registry
    bundle = tmp_path / "registry" / "bundles" / "v1"
    shutil.copytree(tiny_bundle, bundle, copy_function=os.symlink)
    (bundle / "manifest.json").unlink()
    shutil.copy(tiny_bundle / "manifest.json", bundle / "manifest.json")
    write_checksums(bundle)
    point_to(tmp_path / "registry", "v1")
    if damage == "changed":
        (bundle / "manifest.json").write_bytes((bundle / "manifest.json").read_bytes() + b" ")
        needle = "v1: failed verification (changed: manifest.json)"
    else:
        (bundle / SUMS).write_bytes((bundle / SUMS).read_bytes()[:40])  # inside its first digest
        needle = f"{SUMS} truncated (its last line has no end)"
    for name in ("production", "v1"):
        assert _evaluate(params, small_data, name, tmp_path / "out") == 1
        line = _error_line(capsys.readouterr().err)
        assert needle in line and str(bundle) in line, line
    assert not (tmp_path / "out").exists()
