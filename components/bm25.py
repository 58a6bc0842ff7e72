"""Kubeflow component of the `bm25` stage: Lucene BM25 index, runs on every eval set and BM25 negatives."""

from kfp.dsl import Artifact, Dataset, Input, Output

from components.base import stage_component


@stage_component
def bm25(
    workdir: str,
    profile: str,
    recipe: str,
    data_version: str,
    manifest: Output[Dataset],
    upstream: Input[Artifact] = None,
):
    """Run uniret.stages.bm25 on the shared workdir; its manifest.json becomes a Dataset artifact.

    `upstream` (the previous stage's manifest) orders the DAG and draws the lineage edge in the UI.
    """
    from uniret.kubeflow.task import TaskRequest, run_component

    run_component(TaskRequest("bm25", workdir, profile, recipe, data_version), manifest)
