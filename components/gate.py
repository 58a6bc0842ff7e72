"""Kubeflow component of the `gate` stage: candidate vs production vs BM25 against the thresholds."""

from kfp.dsl import Artifact, Dataset, Input, Markdown, Output

from components.base import stage_component


@stage_component
def gate(
    workdir: str,
    profile: str,
    recipe: str,
    data_version: str,
    gate_overrides: str,
    manifest: Output[Dataset],
    decision: Output[Markdown],
    upstream: Input[Artifact] = None,
) -> bool:
    """Run uniret.stages.gate; returns `passed` (decision.json) and shows decision.md as `decision`.

    The return value is the task's single output parameter (named `Output` by kfp): kfp.local
    2.17 resolves a `dsl.If` condition only on outputs with that name, so a named `passed`
    output would silently skip promote in local runs. `gate_overrides` is a JSON object merged
    over params `gate:` (e.g. '{"min_score": 0.3}').
    """
    from uniret.kubeflow.task import TaskRequest, publish_gate, run_component

    request = TaskRequest("gate", workdir, profile, recipe, data_version, gate_overrides)
    ctx = run_component(request, manifest)
    return publish_gate(ctx, decision)
