"""Kubeflow component of the `distill` stage: distillation from the reranker teacher's scores."""

from kfp.dsl import Artifact, Input, Model, Output

from components.base import stage_component


@stage_component
def distill(
    workdir: str,
    profile: str,
    recipe: str,
    data_version: str,
    manifest: Output[Model],
    upstream: Input[Artifact] = None,
):
    """Run uniret.stages.distill on the shared workdir; its manifest.json becomes a Model artifact.

    `upstream` (the previous stage's manifest) orders the DAG and draws the lineage edge in the UI.
    """
    from uniret.kubeflow.task import TaskRequest, run_component

    run_component(TaskRequest("distill", workdir, profile, recipe, data_version), manifest)
