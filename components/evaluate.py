"""Kubeflow component of the `evaluate` stage: BEIR-style metrics of BM25 and every retrieval mode."""

from kfp.dsl import Artifact, Dataset, Input, Markdown, Metrics, Output

from components.base import stage_component


@stage_component
def evaluate(
    workdir: str,
    profile: str,
    recipe: str,
    data_version: str,
    manifest: Output[Dataset],
    metrics: Output[Metrics],
    report: Output[Markdown],
    upstream: Input[Artifact] = None,
):
    """Run uniret.stages.evaluate; nDCG@10 per dataset/system goes to `metrics`, metrics.md to `report`.

    `upstream` (the previous stage's manifest) orders the DAG and draws the lineage edge in the UI.
    """
    from uniret.kubeflow.task import TaskRequest, publish_evaluation, run_component

    ctx = run_component(TaskRequest("evaluate", workdir, profile, recipe, data_version), manifest)
    publish_evaluation(ctx, metrics, report)
