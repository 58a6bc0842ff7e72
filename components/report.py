"""Kubeflow component of the `report` stage: W&B run (offline by default) and the local regression report."""

from kfp.dsl import HTML, Artifact, Dataset, Input, Markdown, Output

from components.base import stage_component


@stage_component
def report(
    workdir: str,
    profile: str,
    recipe: str,
    data_version: str,
    manifest: Output[Dataset],
    summary: Output[Markdown],
    figures: Output[HTML],
    upstream: Input[Artifact] = None,
):
    """Run uniret.stages.report; report.md becomes `summary` and its PNG plots one `figures` page.

    `upstream` (the previous stage's manifest) orders the DAG and draws the lineage edge in the UI.
    """
    from uniret.kubeflow.task import TaskRequest, publish_report, run_component

    ctx = run_component(TaskRequest("report", workdir, profile, recipe, data_version), manifest)
    publish_report(ctx, summary, figures)
