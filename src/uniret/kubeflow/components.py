"""The Kubeflow components of the DAG, generated from the stage list (uniret.stages.STAGES).

Every stage runs through ONE generic component, `stage_task`: a Python component on the project
image whose body hands the stage name to uniret.kubeflow.task.run_component. Per stage it gets
its own name (the task name in the UI and in kfp.local's outputs) and the type of its manifest
artifact (a Model or a Dataset, for lineage). Only the stages that publish extra UI outputs have
a function of their own: evaluate (metrics), gate (the decision, as the branch condition) and
report (its HTML figures). A new stage needs one line in STAGES (plus one here if it is a model).

kfp embeds each function's source in the compiled YAML and execs it in the task's container, so
the bodies import what they use, and this module has no `from __future__ import annotations`
(kfp reads the real annotation types).
"""

import copy
from collections.abc import Callable, Sequence

from kfp import dsl
from kfp.dsl import HTML, Artifact, Dataset, Input, Markdown, Metrics, Model, Output
from kfp.dsl.python_component import PythonComponent

from uniret.stages import STAGES

# Stages whose manifest is a trained model or a servable bundle; every other one is a Dataset.
MODEL_STAGES = frozenset({"warmup", "reranker", "continual", "distill", "index", "promote"})
MANIFEST_OUTPUT = "manifest"


def stage_task(
    stage: str,
    workdir: str, profile: str, recipe: str, data_version: str,  # the pipeline's run parameters
    manifest: Output[Artifact],
    upstream: Input[Artifact] = None,
):
    """Run uniret.stages.<stage> on the shared workdir; its manifest.json becomes the `manifest` artifact.

    `upstream` (the previous stage's manifest) orders the DAG and draws the lineage edge in the UI.
    """
    from uniret.kubeflow.task import TaskRequest, run_component

    run_component(TaskRequest(stage, workdir, profile, recipe, data_version), manifest, upstream)


def evaluate(
    workdir: str, profile: str, recipe: str, data_version: str,  # the pipeline's run parameters
    manifest: Output[Dataset],
    metrics: Output[Metrics],
    report: Output[Markdown],
    upstream: Input[Artifact] = None,
):
    """Run uniret.stages.evaluate; nDCG@10 per dataset/system goes to `metrics`, metrics.md to `report`."""
    from uniret.kubeflow.task import TaskRequest, publish_evaluation, run_component

    ctx = run_component(TaskRequest("evaluate", workdir, profile, recipe, data_version), manifest, upstream)
    publish_evaluation(ctx, metrics, report)


def gate(
    workdir: str, profile: str, recipe: str, data_version: str,  # the pipeline's run parameters
    gate_overrides: str,
    manifest: Output[Dataset],
    decision: Output[Markdown],
    upstream: Input[Artifact] = None,
) -> bool:
    """Run uniret.stages.gate; returns `passed` (decision.json) and shows decision.md as `decision`.

    The return value is the task's single output parameter (named `Output` by kfp), shown in the
    run's UI; promote runs either way and reads decision.json itself (uniret.stages.promote).
    `gate_overrides` is a JSON object merged over params `gate:` (e.g. '{"min_score": 0.3}').
    """
    from uniret.kubeflow.task import TaskRequest, publish_gate, run_component

    ctx = run_component(TaskRequest("gate", workdir, profile, recipe, data_version, gate_overrides), manifest,
                        upstream)
    return publish_gate(ctx, decision)


def report(
    workdir: str, profile: str, recipe: str, data_version: str,  # the pipeline's run parameters
    manifest: Output[Dataset],
    summary: Output[Markdown],
    figures: Output[HTML],
    upstream: Input[Artifact] = None,
):
    """Run uniret.stages.report; report.md becomes `summary` and its PNG plots one `figures` page."""
    from uniret.kubeflow.task import TaskRequest, publish_report, run_component

    ctx = run_component(TaskRequest("report", workdir, profile, recipe, data_version), manifest, upstream)
    publish_report(ctx, summary, figures)


def night_end(workdir: str, profile: str, status: dsl.PipelineTaskFinalStatus):
    """The run's exit handler: a run that did not succeed is recorded and sent as a failed night (the
    promote task records every night that reaches it), so a Kubeflow night that fails is never silent."""
    from uniret.kubeflow.task import record_run_end

    record_run_end(workdir, profile, status.state, status.error_message, status.pipeline_job_resource_name)


# The stages with UI outputs of their own; the function name is the stage (and component) name.
PUBLISHERS: dict[str, Callable[..., object]] = {f.__name__: f for f in (evaluate, gate, report)}


def artifact_type(cls: type[Artifact]) -> str:
    """The IR type string kfp writes for an artifact class, e.g. 'system.Model@0.0.1'."""
    return f"{cls.schema_title}@{cls.schema_version}"


def generic_component(stage: str, generic: PythonComponent) -> PythonComponent:
    """`generic` named `stage`, its manifest typed Model or Dataset; same code, same image."""
    spec = copy.deepcopy(generic.component_spec)
    spec.name = stage
    spec.outputs[MANIFEST_OUTPUT].type = artifact_type(Model if stage in MODEL_STAGES else Dataset)
    return PythonComponent(component_spec=spec, python_func=generic.python_func)


def load_components(image: str, stages: Sequence[str] = tuple(STAGES)) -> dict[str, PythonComponent]:
    """Stage name -> its component on `image` (no `pip install` at task start), in DAG order.

    `install_kfp_package=False`: the image already holds uniret and kfp, so tasks stay offline
    and fast, on Kubernetes and under kfp.local alike.
    """
    make = dict(base_image=image, install_kfp_package=False)
    generic = dsl.component(stage_task, **make)
    return {stage: dsl.component(PUBLISHERS[stage], **make) if stage in PUBLISHERS
            else generic_component(stage, generic) for stage in stages}


def exit_component(image: str) -> PythonComponent:
    """The run's exit handler (`night_end`) on `image`."""
    return dsl.component(night_end, base_image=image, install_kfp_package=False)
