"""Kubeflow component of the `report` stage: W&B run (offline by default) and the local regression report."""

from kfp.dsl import Artifact, Dataset, Input, Output

from components.base import stage_component


@stage_component
def report(
    workdir: str,
    profile: str,
    recipe: str,
    data_version: str,
    manifest: Output[Dataset],
    upstream: Input[Artifact] = None,
):
    """Run uniret.stages.report on the shared workdir; its manifest.json becomes a Dataset artifact.

    `upstream` (the previous stage's manifest) orders the DAG and draws the lineage edge in the UI.
    """
    from uniret.kubeflow.task import TaskRequest, run_component

    run_component(TaskRequest("report", workdir, profile, recipe, data_version), manifest)
