"""Kubeflow component of the `validate` stage: great-expectations checks and drift; writes the validated dataset snapshots."""

from kfp.dsl import Dataset, Output

from components.base import stage_component


@stage_component
def validate(
    workdir: str,
    profile: str,
    recipe: str,
    data_version: str,
    manifest: Output[Dataset],
):
    """Run uniret.stages.validate on the shared workdir; its manifest.json becomes a Dataset artifact."""
    from uniret.kubeflow.task import TaskRequest, run_component

    run_component(TaskRequest("validate", workdir, profile, recipe, data_version), manifest)
