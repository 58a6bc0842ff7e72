"""Kubeflow component of the `bench` stage: speed and size of the candidate bundle, for the gate."""

from kfp.dsl import Artifact, Dataset, Input, Output

from components.base import stage_component


@stage_component
def bench(
    workdir: str,
    profile: str,
    recipe: str,
    data_version: str,
    manifest: Output[Dataset],
    upstream: Input[Artifact] = None,
):
    """Run uniret.stages.bench on the shared workdir (artifacts/bench/bench.json, read by the gate)."""
    from uniret.kubeflow.task import TaskRequest, run_component

    run_component(TaskRequest("bench", workdir, profile, recipe, data_version), manifest)
