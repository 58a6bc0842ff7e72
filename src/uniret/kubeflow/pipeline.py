"""The retraining DAG as a Kubeflow pipeline (pipelines/retrain.py compiles it to retrain.yaml).

validate -> feedback -> bm25 -> warmup -> mine -> reranker -> continual -> distill -> index -> bench
-> evaluate -> gate -> promote -> report: the chain is uniret.stages.STAGES in order. promote runs
whatever the gate decided, as in `uniret nightly` (uniret.stages.promote): it promotes a passed
candidate, holds it while promotion is paused or its content was rolled back, and on a blocked or
paused night refreshes production's corpus, so served documents are never older than a night; the
report then shows tonight's decision and what promote did. Any ordered subset of the
stages can be assembled (e.g. validate -> bm25 -> evaluate), so a prefix of the DAG runs alone.
Stages share outputs through the workdir; each task also passes its manifest artifact to the
next, which orders the DAG and gives the Kubeflow UI its lineage.
"""

# No `from __future__ import annotations`: kfp reads the pipeline signature's real types.
from collections.abc import Callable, Sequence
from typing import Any

from kfp import dsl

from uniret.config.loader import ConfigError
from uniret.config.pipeline import PipelineConfig
from uniret.kubeflow.components import PUBLISHERS, exit_component, load_components
from uniret.kubeflow.settings import EXIT_TASK, configure_task
from uniret.stages import STAGES

BRANCHES = ("promote", "report")  # stages after the gate, in this order


def plan_stages(stages: Sequence[str] | None = None) -> list[str]:
    """The requested stages in DAG order; unknown names and a promote without gate are errors."""
    chosen = list(STAGES) if not stages else list(dict.fromkeys(stages))
    unknown = [s for s in chosen if s not in STAGES]
    if unknown:
        raise ConfigError(f"pipeline stages: unknown {', '.join(unknown)}; known: {', '.join(STAGES)}")
    if "promote" in chosen and "gate" not in chosen:
        raise ConfigError("pipeline stages: promote needs gate (it acts on the gate's decision)")
    return [s for s in STAGES if s in chosen]


def build_pipeline(config: PipelineConfig, stages: Sequence[str] | None = None) -> Callable[..., Any]:
    """A kfp pipeline running `stages` (default: the whole DAG) with `config`'s image and Kubernetes settings."""
    cfg = config
    plan = plan_stages(stages)
    components = load_components(cfg.image, plan)

    def task(stage: str, **kwargs: Any) -> dsl.PipelineTask:
        if stage not in PUBLISHERS:
            kwargs["stage"] = stage  # the generic component runs the stage it is told
        return configure_task(components[stage](**kwargs), stage, cfg)

    def assemble(common: dict[str, Any], gate_overrides: Any) -> None:
        """The stage tasks in DAG order, each after the one before (report after promote)."""
        tasks: dict[str, dsl.PipelineTask] = {}
        previous = None
        for stage in (s for s in plan if s not in BRANCHES):
            kwargs = dict(common)
            if stage == "gate":
                kwargs["gate_overrides"] = gate_overrides
            if previous is not None:
                kwargs["upstream"] = previous.outputs["manifest"]
            previous = tasks[stage] = task(stage, **kwargs)
        if "promote" in plan:  # no dsl.If: a blocked or held night refreshes the corpus (module doc)
            tasks["promote"] = task("promote", **common, upstream=tasks["gate"].outputs["manifest"])
        if "report" in plan:
            # after promote (the report shows what it did), else gate (its decision), else evaluate
            after = tasks.get("promote") or tasks.get("gate") or tasks.get("evaluate") or previous
            upstream = {"upstream": after.outputs["manifest"]} if after is not None else {}
            task("report", **common, **upstream)

    @dsl.pipeline(name=cfg.name, description=cfg.description)
    def retrain(
        recipe: str = "",  # "": params.yaml model.recipe
        profile: str = cfg.profile,
        data_version: str = "",
        gate_overrides: str = "{}",
        workdir: str = cfg.mount_path,
    ):
        common = {"workdir": workdir, "profile": profile, "recipe": recipe, "data_version": data_version}
        if "promote" not in plan:  # a prefix is not a night: nothing to record when it ends
            assemble(common, gate_overrides)
            return
        end = configure_task(exit_component(cfg.image)(workdir=workdir, profile=profile), EXIT_TASK, cfg)
        with dsl.ExitHandler(end, name="night"):  # a failed night is recorded and sent (night_end)
            assemble(common, gate_overrides)

    return retrain
