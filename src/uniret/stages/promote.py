"""Promote stage: when the gate passed, publish the index bundle and make it production.

When the gate blocked, nothing is published and the stage's manifest says
"skipped: gate blocked (<reasons>)"; the stage itself succeeds. With `canary.enabled` the passed
bundle starts a canary instead (docs/gate-registry.md#canary): a canary still running is decided
first (promote, roll back, or wait: then tonight's candidate waits too, and the manifest says so).
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
from uniret.registry.pointer import read_pointer
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
        if ctx.params.section("canary").enabled and read_pointer(registry_root(ctx.params)) is not None:
            # (a cold start has no production to compare with: its first bundle is promoted)
            manifest["metrics"] = _canary(ctx, out, bundle, evaluation, decision, lineage, attachments)
            return manifest["metrics"]
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


def _canary(ctx: StageContext, out, bundle, evaluation, decision, lineage, attachments) -> dict[str, Any]:
    """gate -> canary -> promote: decide the running canary, then start this bundle's (module doc)."""
    from uniret.interleaving.canary_run import canary_log_dir, decide_canary, start_canary
    from uniret.registry.canary import running

    root = registry_root(ctx.params)
    canary_log_dir(ctx.params)  # no serving log, no evidence: refuse before anything is published
    result: dict[str, Any] = {"promoted": False, "canary": True}
    if running(root) is not None:
        earlier = decide_canary(ctx.params, root, out / "previous_canary")
        result["previous_canary"] = {k: earlier[k] for k in ("canary", "candidate", "status", "reason")}
        if earlier["status"] == "running":
            result["status"] = f"skipped: canary of {earlier['candidate']} still running ({earlier['reason']})"
            atomic_write_json(out / RESULT_JSON, result)
            log.warning("promote %s", result["status"])
            return result
    state = start_canary(ctx.params, root, bundle, evaluation=evaluation, decision=decision, lineage=lineage,
                         attachments=attachments)
    result.update(status=f"canary started: {state['candidate']} against {state['production']}",
                  version=state["candidate"], canary_id=state["id"], notify=state["notify"]["status"])
    atomic_write_json(out / RESULT_JSON, result)
    log.info("promote: %s (notify %s)", result["status"], state["notify"]["status"])
    return result
