"""components/: one thin component per stage, one image, no pip install at task start."""

from __future__ import annotations

import inspect

import pytest

from uniret.kubeflow.project import load_builder
from uniret.stages import STAGES


@pytest.fixture(scope="module")
def components(repo_root):
    load_builder(repo_root)  # puts the project folder on sys.path
    from components import load_components

    return load_components()


def test_one_component_per_stage_each_running_its_own_stage(components, repo_root):
    assert list(components) == STAGES
    for stage, comp in components.items():
        assert (repo_root / "components" / f"{stage}.py").is_file()
        assert comp.name == stage
        source = inspect.getsource(comp.python_func)
        # the wrapper hands its own stage name to the shared runtime (no copy-paste slip)
        assert f'TaskRequest("{stage}"' in source, stage
        assert len(source.splitlines()) < 40, f"{stage}: components hold no logic"


def test_all_on_one_image_and_offline(components):
    from components.image import IMAGE, pipeline_image

    assert IMAGE == pipeline_image()
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
    for stage in ("warmup", "reranker", "continual", "distill", "index"):
        assert outputs(stage) == {"manifest": "system.Model@0.0.1"}, stage
    assert "gate_overrides" in components["gate"].component_spec.inputs
    assert "upstream" not in components["validate"].component_spec.inputs
    assert components["bm25"].component_spec.inputs["upstream"].optional
