"""One generic stage component plus the three that publish UI outputs, generated from the stage list."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import yaml

from uniret.config import load_params
from uniret.kubeflow import components as kc
from uniret.kubeflow import pipeline as kp
from uniret.kubeflow.project import compile_pipeline
from uniret.stages import STAGES

IMAGE = "registry.example/uniret:test"


@pytest.fixture(scope="module")
def components():
    return kc.load_components(IMAGE)


def test_every_stage_but_three_runs_the_one_generic_component(components):
    assert list(components) == STAGES
    special = {stage for stage, comp in components.items() if comp.python_func is not kc.stage_task}
    assert special == {"evaluate", "gate", "report"} == set(kc.PUBLISHERS)
    for stage, comp in components.items():
        assert comp.name == stage  # the task name in the UI and in kfp.local's outputs
        if stage not in special:
            assert comp.component_spec.inputs["stage"].type == "String", stage


def test_components_folder_is_a_thin_entry_point(repo_root):
    assert sorted(p.name for p in (repo_root / "components").glob("*.py")) == ["__init__.py"]
    out = subprocess.run([sys.executable, "-c", "import components; print(sorted(components.load_components('x')))"],
                         cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(sorted(STAGES))


def test_all_on_one_image_and_offline(components):
    for stage, comp in components.items():
        container = comp.component_spec.implementation.container
        assert container.image == IMAGE, stage
        assert "pip install" not in " ".join(container.command), f"{stage}: a task must not pip install"


def test_typed_outputs_for_lineage_and_figures(components):
    def outputs(stage: str) -> dict[str, str]:
        return {k: v.type for k, v in (components[stage].component_spec.outputs or {}).items()}

    assert outputs("evaluate") == {"manifest": "system.Dataset@0.0.1", "metrics": "system.Metrics@0.0.1",
                                   "report": "system.Markdown@0.0.1"}
    assert outputs("gate") == {"manifest": "system.Dataset@0.0.1", "decision": "system.Markdown@0.0.1",
                               "Output": "Boolean"}
    assert outputs("report") == {"manifest": "system.Dataset@0.0.1", "summary": "system.Markdown@0.0.1",
                                 "figures": "system.HTML@0.0.1"}
    for stage in ("warmup", "reranker", "continual", "distill", "index", "promote"):
        assert outputs(stage) == {"manifest": "system.Model@0.0.1"}, stage
    for stage in ("validate", "bm25", "mine"):
        assert outputs(stage) == {"manifest": "system.Dataset@0.0.1"}, stage
    assert "gate_overrides" in components["gate"].component_spec.inputs
    assert components["bm25"].component_spec.inputs["upstream"].optional
    # the per-stage copies share the generic spec's code but not its objects
    assert components["bm25"].component_spec is not components["mine"].component_spec


def test_a_new_stage_is_one_line_in_the_stage_list(repo_root, monkeypatch, tmp_path):
    """A stage inserted into STAGES (a hypothetical `calibrate` between bench and evaluate) joins the chain as a generic task."""
    stages = [*STAGES[:STAGES.index("evaluate")], "calibrate", *STAGES[STAGES.index("evaluate"):]]
    monkeypatch.setattr(kp, "STAGES", stages)
    cfg = load_params(repo_root / "params.yaml").section("pipeline")
    path = compile_pipeline(dataclasses.replace(cfg, gpu_stages=[]), tmp_path / "with-calibrate.yaml",
                            ["bench", "calibrate", "evaluate"])
    spec, _ = yaml.safe_load_all(path.read_text())
    tasks = spec["root"]["dag"]["tasks"]
    assert tasks["calibrate"]["inputs"]["parameters"]["stage"] == {"runtimeValue": {"constant": "calibrate"}}
    assert tasks["calibrate"]["inputs"]["artifacts"]["upstream"]["taskOutputArtifact"]["producerTask"] == "bench"
    assert tasks["evaluate"]["inputs"]["artifacts"]["upstream"]["taskOutputArtifact"]["producerTask"] == "calibrate"
