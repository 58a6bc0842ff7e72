"""Kubeflow component of the `mine` stage: hard negatives from the warmup model's dense and lexical rankings."""

from kfp.dsl import Artifact, Dataset, Input, Output

from components.base import stage_component


@stage_component
def mine(
    workdir: str,
    profile: str,
    recipe: str,
    data_version: str,
    manifest: Output[Dataset],
    upstream: Input[Artifact] = None,
):
    """Run uniret.stages.mine on the shared workdir; its manifest.json becomes a Dataset artifact.

    `upstream` (the previous stage's manifest) orders the DAG and draws the lineage edge in the UI.
    """
    from uniret.kubeflow.task import TaskRequest, run_component

    run_component(TaskRequest("mine", workdir, profile, recipe, data_version), manifest)
