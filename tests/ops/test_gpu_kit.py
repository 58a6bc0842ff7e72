"""The GPU check's kit and its one-call limits (issue 60): sizes computed from the real files, the
packed backbones unpacked bit for bit, the probe's one-line refusals, the per-step time limit."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from uniret.ops import gpu_probe
from uniret.ops.gpu_kit import (
    CARRY_LIMIT_MIB,
    DEFAULT_MAX_DOCS,
    TARGET_MIB,
    WEIGHTS,
    build_kit,
    folder_mib,
    main,
    tree_mib,
    unpack_kit,
)
from uniret.ops.gpu_report import Report, run_step

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def small_kit(shared_data, tmp_path_factory) -> Path:
    """A kit of 150 SciFact documents (the dry-run test's too)."""
    out = tmp_path_factory.mktemp("kit") / ".gpu-kit"
    build_kit(shared_data, "scifact", out, wheels=[], max_docs=150)
    return out


def _git_bytes() -> int:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return sum((REPO / n).stat().st_size for n in listed if n and (REPO / n).is_file() and not (REPO / n).is_symlink())


def test_kit_sizes_are_the_files_sizes(small_kit):
    info = json.loads((small_kit / "kit.json").read_text())
    assert info["weights"] == "float16" and info["wheels"] == [] and info["backbones"] == ["minilm", "splade-tiny"]
    for part, mib in info["mib"].items():
        assert mib == round(folder_mib(small_kit / part), 2), part
    assert info["total_mib"] == pytest.approx(sum(info["mib"].values()), abs=0.02)
    assert info["tree_mib"] == pytest.approx(_git_bytes() / 2**20, abs=0.02)
    assert info["travel_mib"] == pytest.approx(info["tree_mib"] + info["total_mib"], abs=0.02)
    assert info["travel_mib"] <= TARGET_MIB < CARRY_LIMIT_MIB
    assert info["pruned"]["minilm"]["rows"] == 30522 and 0 < info["pruned"]["minilm"]["rows_kept"] < 30522
    assert "splade-tiny" not in info["pruned"]  # its tied MLM decoder reads every row


def test_gpu_kit_is_ignored_by_git():
    done = subprocess.run(["git", "check-ignore", "-q", ".gpu-kit/kit.json"], cwd=REPO)
    assert done.returncode == 0


def test_unpacked_backbones_are_the_float16_weights(small_kit, tmp_path, monkeypatch):
    from safetensors.numpy import load_file
    from transformers import AutoTokenizer

    from uniret.models.backbones import BACKBONES_ENV, load_backbone, resolve_backbone

    monkeypatch.delenv(BACKBONES_ENV, raising=False)
    sources = {alias: Path(resolve_backbone(alias)) for alias in ("minilm", "splade-tiny")}
    backbones = unpack_kit(small_kit, tmp_path / "unpacked")
    assert (tmp_path / "unpacked" / "kit.json").is_file()
    info = json.loads((small_kit / "kit.json").read_text())
    for alias, source in sources.items():
        original = load_file(str(source / WEIGHTS))
        unpacked = load_file(str(backbones / alias / WEIGHTS))
        assert list(unpacked) == list(original)
        for name, value in original.items():
            got = unpacked[name]
            want = value.astype(np.float16) if value.dtype.kind == "f" else value  # integer buffers stay as they are
            assert got.shape == want.shape and got.dtype == want.dtype, name
            if alias == "minilm" and name == info["pruned"]["minilm"]["tensor"]:
                rows = np.frombuffer((small_kit / "backbones" / alias / "rows.i32").read_bytes(), dtype=np.int32)
                assert np.array_equal(got[rows], want[rows])  # every token of the kit's data: exact
                others = np.setdiff1d(np.arange(len(want)), rows)
                assert np.all(got[others] == got[others[0]])  # the rest: one filler row (the kept rows' mean)
            else:
                assert np.array_equal(got, want), name  # bit for bit float16
        assert (backbones / alias / "tokenizer.json").read_bytes() == (source / "tokenizer.json").read_bytes()
    monkeypatch.setenv(BACKBONES_ENV, str(backbones))
    model = load_backbone("splade-tiny", with_mlm_head=True)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert AutoTokenizer.from_pretrained(str(backbones / "minilm"))("hello world")["input_ids"][0] == 101


def test_unpack_without_a_kit_is_one_clear_line(tmp_path, capsys):
    assert main(["unpack", "--kit", str(tmp_path / "none"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "make gpu-kit" in err[0]


@pytest.mark.slow
def test_default_kit_fits_one_call_with_margin(shared_data, tmp_path):
    info = build_kit(shared_data, "scifact", tmp_path / ".gpu-kit", wheels=[], max_docs=DEFAULT_MAX_DOCS)
    assert info["docs"] == DEFAULT_MAX_DOCS
    assert info["travel_mib"] == pytest.approx(tree_mib(REPO) + folder_mib(tmp_path / ".gpu-kit"), abs=0.05)
    assert info["travel_mib"] <= TARGET_MIB


def test_probe_refuses_a_missing_kit(tmp_path):
    rc, message = gpu_probe.probe(tmp_path / ".gpu-kit", "scifact", allow_cpu=True)
    assert rc == gpu_probe.CANNOT_RUN
    assert message.startswith("gpu-probe: the kit is incomplete") and "make gpu-kit" in message and "\n" not in message


def test_probe_names_a_missing_package(small_kit, monkeypatch):
    monkeypatch.setattr(gpu_probe, "REQUIRED", {**gpu_probe.REQUIRED, "no_such_module_x": "no-such-dist"})
    rc, message = gpu_probe.probe(small_kit, "scifact", allow_cpu=True)
    assert rc == gpu_probe.CANNOT_RUN
    assert "missing here: no_such_module_x (no-such-dist)" in message and "\n" not in message


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal happens only without CUDA")
def test_probe_without_cuda(small_kit):
    rc, message = gpu_probe.probe(small_kit, "scifact", allow_cpu=False)
    assert rc == gpu_probe.CANNOT_RUN and message.splitlines()[-1].startswith("gpu-probe: no CUDA device: torch ")
    rc, message = gpu_probe.probe(small_kit, "scifact", allow_cpu=True)
    assert rc == 0 and message.startswith("gpu-probe: python ") and "DRY RUN" in message


def test_probe_required_packages_are_on_the_gpu_machine():
    assert set(gpu_probe.REQUIRED.values()) <= gpu_probe.GPU_MACHINE_PACKAGES


def test_a_step_past_its_time_limit_is_stopped_and_recorded(tmp_path):
    report = Report(device={"type": "cpu"}, versions={}, settings={}, command="test", out_dir=tmp_path)
    start = time.perf_counter()
    record = run_step(report, "hang", lambda: time.sleep(30), timeout_s=0.3)
    assert time.perf_counter() - start < 5
    assert record.status == "failed" and record.error.startswith("StepTimeout")
    run_step(report, "next", lambda: {"docs_per_s": 1.0}, timeout_s=5)
    doc = json.loads((tmp_path / "gpu_check.json").read_text())  # written after every step
    assert [s["status"] for s in doc["steps"]] == ["failed", "ok"]


def test_spent_budget_skips_the_remaining_steps(monkeypatch, tmp_path):
    import argparse

    from uniret.ops import gpu_steps

    calls = []
    monkeypatch.setattr(gpu_steps, "step_data", lambda run: calls.append("data") or time.sleep(2.5) or {})
    monkeypatch.setattr(gpu_steps, "step_encode", lambda run: calls.append("encode") or {})
    args = argparse.Namespace(params=None, profile="tiny", train_steps=2, dataset="scifact", steps="data,encode",
                              work=str(tmp_path / "work"), data=str(tmp_path), train_queries=4, train_docs=10,
                              encode_docs=None, queries=2, out=str(tmp_path / "out"), step_timeout=0, budget=3.0)
    report = gpu_steps.run_check(args, {"type": "cpu"}, {}, "test")
    assert calls == ["data"]
    assert [(s.name, s.status) for s in report.steps] == [("data", "ok"), ("encode", "skipped")]
    assert "budget is spent" in report.steps[1].error


def test_mine_exact_search_without_faiss_ranks_as_faiss(monkeypatch):
    from uniret.stages.mine import _exact_dense_search

    rng = np.random.default_rng(5)
    docs, queries = rng.standard_normal((400, 24)).astype(np.float32), rng.standard_normal((30, 24)).astype(np.float32)
    with_faiss = _exact_dense_search(docs, queries, 20)
    monkeypatch.setitem(sys.modules, "uniret.retrieval.dense", None)  # import -> ImportError
    without = _exact_dense_search(docs, queries, 20)
    assert np.array_equal(with_faiss[1], without[1])
    assert np.allclose(with_faiss[0], without[0], atol=1e-4)
