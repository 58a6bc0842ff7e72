"""The retraining DAG as a Kubeflow pipeline (pipelines/retrain.py compiles it to retrain.yaml).

validate -> feedback -> bm25 -> warmup -> mine -> reranker -> continual -> distill -> index -> bench
-> evaluate -> gate -> dsl.If(passed) -> promote, with report after evaluate (and after gate, whose
decision it reads): the chain is uniret.stages.STAGES in order. Any ordered subset of the
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
from uniret.kubeflow.components import PUBLISHERS, load_components
from uniret.kubeflow.settings import configure_task
from uniret.stages import STAGES

BRANCHES = ("promote", "report")  # stages off the main chain


def plan_stages(stages: Sequence[str] | None = None) -> list[str]:
    """The requested stages in DAG order; unknown names and a promote without gate are errors."""
    chosen = list(STAGES) if not stages else list(dict.fromkeys(stages))
    unknown = [s for s in chosen if s not in STAGES]
    if unknown:
        raise ConfigError(f"pipeline stages: unknown {', '.join(unknown)}; known: {', '.join(STAGES)}")
    if "promote" in chosen and "gate" not in chosen:
        raise ConfigError("pipeline stages: promote needs gate (it runs only when the gate passed)")
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

    @dsl.pipeline(name=cfg.name, description=cfg.description)
    def retrain(
        recipe: str = "",  # "": params.yaml model.recipe
        profile: str = cfg.profile,
        data_version: str = "",
        gate_overrides: str = "{}",
        workdir: str = cfg.mount_path,
    ):
        common = {"workdir": workdir, "profile": profile, "recipe": recipe, "data_version": data_version}
        tasks: dict[str, dsl.PipelineTask] = {}
        previous = None
        for stage in (s for s in plan if s not in BRANCHES):
            kwargs = dict(common)
            if stage == "gate":
                kwargs["gate_overrides"] = gate_overrides
            if previous is not None:
                kwargs["upstream"] = previous.outputs["manifest"]
            previous = tasks[stage] = task(stage, **kwargs)
        if "report" in plan:
            # after gate when it runs (the report reads its decision from the shared workdir),
            # else after evaluate; never inside the If: a blocked candidate is reported too
            after = tasks.get("gate") or tasks.get("evaluate") or previous
            upstream = {"upstream": after.outputs["manifest"]} if after is not None else {}
            task("report", **common, **upstream)
        if "promote" in plan:
            gate = tasks["gate"]
            with dsl.If(gate.outputs["Output"] == True, name="gate-passed"):  # noqa: E712 - a CEL condition
                task("promote", **common, upstream=gate.outputs["manifest"])

    return retrain
