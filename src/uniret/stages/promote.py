"""Promote stage: when the gate passed, publish the index bundle and make it production.

When the gate blocked, nothing is published and the stage's manifest says
"skipped: gate blocked (<reasons>)"; the stage itself succeeds.
"""

from __future__ import annotations

import logging
from typing import Any

from uniret.config.paths import params_dir
from uniret.core.jsonio import read_json
from uniret.evaluation.outputs import PER_QUERY_DIR
from uniret.milvus.promotion import engine_hook, export_before_flip
from uniret.registry.bundles import EVALUATION_DIR
from uniret.registry.configured import registry_config, registry_root, serving_from
from uniret.registry.lineage import build_lineage
from uniret.registry.promotion import promote
from uniret.runtime import StageContext, stage_output
from uniret.stages.gate import DECISION_JSON, INDEX_BUNDLE, METRICS_JSON
from uniret.utils.files import atomic_write_json

log = logging.getLogger("uniret.registry")

RESULT_JSON = "promotion.json"


def blocked_summary(decision: dict[str, Any]) -> str:
    """'skipped: gate blocked (reason; reason)' from a decision.json dict."""
    reasons = [f"{c['name']}: {c['reason']}" for c in decision.get("checks", []) if c.get("status") == "fail"]
    return f"skipped: gate blocked ({'; '.join(reasons) or 'no reason recorded'})"


def run(ctx: StageContext) -> dict[str, Any]:
    """Publish + flip the pointer + notify serving, only if artifacts/gate/decision.json passed."""
    decision_path = ctx.require("gate") / DECISION_JSON
    decision = read_json(decision_path)
    inputs = {"decision": decision_path}
    with stage_output(ctx, "promote", sections=["registry"], inputs=inputs) as (out, manifest):
        if decision.get("passed") is not True:
            summary = blocked_summary(decision)
            log.warning("promote %s", summary)
            manifest["metrics"] = {"promoted": False, "status": summary}
            atomic_write_json(out / RESULT_JSON, {"promoted": False, "status": summary})
            return manifest["metrics"]
        bundle = ctx.require("index") / INDEX_BUNDLE
        evaluation = read_json(ctx.require("evaluate") / METRICS_JSON)
        validate = ctx.stage_dir("validate")
        registry = registry_config(ctx.params)
        # the served system's per-query scores go with the bundle: the report bootstraps candidates against them
        system = str(decision.get("candidate"))
        served = ctx.require("evaluate") / PER_QUERY_DIR / system
        attachments = {f"{EVALUATION_DIR}/{PER_QUERY_DIR}/{system}": served} if served.is_dir() else None
        lineage = build_lineage(ctx.params, validate if validate.is_dir() else None, None, params_dir(ctx.params))
        milvus = ctx.params.section("milvus") if "milvus" in ctx.params.raw else None
        engine, on_change = engine_hook(milvus) if milvus is not None else (None, None)
        if engine is not None:  # the candidate's collection is complete before the flip moves the alias onto it
            log.info("promote: milvus export %s", export_before_flip(engine, milvus, bundle))
        result = promote(
            registry_root(ctx.params),
            bundle,
            evaluation=evaluation,
            decision=decision,
            lineage=lineage,
            serving=serving_from(ctx.params),
            dvc_push=registry.dvc_push,
            keep_history=registry.keep_history,
            attachments=attachments,
            on_change=on_change,
        )
        if engine is not None:
            engine.close()
        status = "promoted" if result.changed else "unchanged: bundle already is production"
        manifest["metrics"] = {"promoted": result.changed, "status": status, "version": result.version,
                               "previous": result.previous, "notify": result.notify.status, "dvc": result.dvc,
                               "retention": result.retention, "pruned": result.pruned, "engine": result.engine}
        atomic_write_json(out / RESULT_JSON, result.to_dict())
    log.info("promote: %s %s (notify %s: %s)", status, result.version, result.notify.status, result.notify.detail)
    return manifest["metrics"]
