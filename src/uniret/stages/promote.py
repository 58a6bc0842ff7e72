"""Promote stage: what a night does after the gate, for `uniret nightly` and the Kubeflow pipeline alike.

- The gate passed and promotion is not held: publish the index bundle and make it production (with
  `canary.enabled`, start a canary instead (docs/gate-registry.md#canary): a canary still running is
  decided first (promote, roll back, or wait: then tonight's candidate waits too)).
- Held: promotion paused (`uniret registry pause`, or params nightly.promote: false), or the passed
  candidate's content rejected by a rollback: nothing is published, whatever the gate decided.
- Blocked or held: today's corpus is re-indexed with production's own model and promoted after its
  checks (params nightly.refresh_corpus, uniret.stages.corpus_refresh), so served documents are never
  older than a night. A refresh that fails is recorded (`error`): the nightly exits 1, the Kubeflow
  task fails, after promotion.json is written.

promotion.json records tonight's `outcome` (promoted | unchanged | canary | blocked | rejected | paused),
the one-line `summary`, the refresh, and the sha256 of the gate decision it acted on: the report
shows it only for that decision, never a stale one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from uniret.config.paths import params_dir
from uniret.core.jsonio import read_json
from uniret.core.stage_files import PROMOTION_JSON
from uniret.evaluation.outputs import PER_QUERY_DIR
from uniret.milvus.promotion import engine_hook, export_before_flip
from uniret.registry.bundles import EVALUATION_DIR, read_manifest
from uniret.registry.checkpoints import CHECKPOINT_DIR, checkpoint_attachment
from uniret.registry.configured import registry_config, registry_root, serving_from
from uniret.registry.control import read_control
from uniret.registry.lineage import build_lineage
from uniret.registry.pointer import read_pointer
from uniret.registry.promotion import promote
from uniret.runtime import StageContext, stage_output
from uniret.stages.gate import DECISION_JSON, INDEX_BUNDLE, METRICS_JSON
from uniret.stages.recipe_stage import MODEL_DIR
from uniret.utils.files import atomic_write_json, hash_path

log = logging.getLogger("uniret.registry")

RESULT_JSON = PROMOTION_JSON


def blocked_summary(decision: dict[str, Any]) -> str:
    """'skipped: gate blocked (reason; reason)' from a decision.json dict."""
    reasons = [f"{c['name']}: {c['reason']}" for c in decision.get("checks", []) if c.get("status") == "fail"]
    return f"skipped: gate blocked ({'; '.join(reasons) or 'no reason recorded'})"


def promotion_held(ctx: StageContext, passed: bool) -> tuple[str, str] | None:
    """(outcome, summary) when tonight must not promote though the DAG ran: "paused" (registry control
    or params nightly.promote: false; whatever the gate decided), or "rejected" (a passed candidate whose
    content a rollback rejected). None: promote when the gate passed."""
    root = registry_root(ctx.params)
    control = read_control(root)  # a damaged control.json fails the run: never promote on a guess
    pointer = read_pointer(root)
    stays = f"production stays {pointer['version']}" if pointer else "nothing is in production"
    if not ctx.params.section("nightly").promote:
        return "paused", f"paused: params nightly.promote is false; {stays}"
    if control.paused:
        return "paused", f"paused: {control.pause_text()}; {stays}"
    if passed and control.rejected:
        refusal = control.refusal(hash_path(ctx.require("index") / INDEX_BUNDLE))
        if refusal is not None:
            return "rejected", f"blocked: the candidate is not promoted again: {refusal}; {stays}"
    return None


def run(ctx: StageContext) -> dict[str, Any]:
    """Promote, hold or refresh per the module doc; the manifest's metrics say which (`outcome`)."""
    decision_path = ctx.require("gate") / DECISION_JSON
    decision = read_json(decision_path)
    passed = decision.get("passed") is True
    inputs = {"decision": decision_path}
    with stage_output(ctx, "promote", sections=["registry", "nightly"], inputs=inputs) as (out, manifest):
        held = promotion_held(ctx, passed)
        if held is not None or not passed:
            gate_says = "gate passed" if passed else blocked_summary(decision).removeprefix("skipped: ")
            if held is None:
                outcome, summary = "blocked", f"blocked: {gate_says}"
            else:
                outcome, summary = held[0], f"{held[1]}; {gate_says}" if held[0] == "paused" else held[1]
            log.warning("promote: %s", summary)
            status = blocked_summary(decision) if held is None else summary  # "skipped: gate blocked (...)"
            result: dict[str, Any] = {"promoted": False, "outcome": outcome, "status": status, "summary": summary}
            result.update(_refresh(ctx, outcome))
        elif ctx.params.section("canary").enabled and read_pointer(registry_root(ctx.params)) is not None:
            # (a cold start has no production to compare with: its first bundle is promoted)
            result = _canary(ctx, out, ctx.require("index") / INDEX_BUNDLE, decision)
            result.update(outcome="canary", summary=result["status"])
        else:
            result = _promote(ctx, decision)
        result["decision_sha256"] = hash_path(decision_path)
        record = result.pop("record", None) or dict(result)
        manifest["metrics"] = result
        atomic_write_json(out / RESULT_JSON, {**record, "decision_sha256": result["decision_sha256"]})
    return manifest["metrics"]


def _refresh(ctx: StageContext, outcome: str) -> dict[str, Any]:
    """No new model tonight: today's corpus with production's model (uniret.stages.corpus_refresh).
    The outcome stays; a refresh that fails is returned as `error` (the caller fails the night)."""
    from uniret.stages.corpus_refresh import refresh_corpus

    nightly = ctx.params.section("nightly")
    setting = nightly.refresh_corpus if nightly.promote else "off"  # nightly.promote: false promotes nothing at all
    try:
        refresh = refresh_corpus(ctx, setting, paused=outcome == "paused").to_dict()
    except Exception as exc:  # noqa: BLE001 - the gate's decision stands; the night is reported failed
        log.exception("promote: corpus refresh failed")
        text = f"corpus refresh failed: {exc}"
        return {"refresh": {"status": "failed", "summary": text}, "error": text}
    return {"refresh": refresh}


def _promote(ctx: StageContext, decision: dict[str, Any]) -> dict[str, Any]:
    """Publish the candidate and flip the pointer to it (milvus first when configured)."""
    bundle = ctx.require("index") / INDEX_BUNDLE
    evaluation = read_json(ctx.require("evaluate") / METRICS_JSON)
    milvus = ctx.params.section("milvus") if "milvus" in ctx.params.raw else None
    engine, on_change = engine_hook(milvus) if milvus is not None else (None, None)
    if engine is not None:  # the candidate's collection is complete before the flip moves the alias onto it
        log.info("promote: milvus export %s", export_before_flip(engine, milvus, bundle))
    registry = registry_config(ctx.params)
    lineage, attachments = _lineage(ctx, decision)
    try:
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
    finally:
        if engine is not None:
            engine.close()
    status = "promoted" if result.changed else "unchanged: bundle already is production"
    log.info("promote: %s %s (notify %s: %s)", status, result.version, result.notify.status, result.notify.detail)
    return {"promoted": result.changed, "outcome": "promoted" if result.changed else "unchanged", "status": status,
            "summary": "promoted" if result.changed else status, "version": result.version,
            "previous": result.previous, "notify": result.notify.status, "dvc": result.dvc,
            "retention": result.retention, "pruned": result.pruned, "engine": result.engine,
            "checkpoint": CHECKPOINT_DIR in (attachments or {}),
            "record": {**result.to_dict(), "outcome": "promoted" if result.changed else "unchanged"}}


def _lineage(ctx: StageContext, decision: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The candidate's lineage and its attachments: the served system's per-query scores go with the
    bundle (the report bootstraps candidates against them), and so does the checkpoint it was built
    from (what `start_model: production` warm-starts from)."""
    validate = ctx.stage_dir("validate")
    system = str(decision.get("candidate"))
    served = ctx.require("evaluate") / PER_QUERY_DIR / system
    attachments = {f"{EVALUATION_DIR}/{PER_QUERY_DIR}/{system}": served} if served.is_dir() else {}
    attachments.update(candidate_checkpoint(ctx.stage_dir, ctx.require("index") / INDEX_BUNDLE))
    lineage = build_lineage(ctx.params, validate if validate.is_dir() else None, None, params_dir(ctx.params))
    return lineage, attachments or None


def candidate_checkpoint(stage_dir: Callable[[str], Path], bundle: Path) -> dict[str, Path]:
    """{CHECKPOINT_DIR: the checkpoint `bundle` was built from} (artifacts/<its source stage>/model,
    uniret.registry.checkpoints), or {} with a warning when that folder is gone or holds another model:
    the bundle is still published, and `start_model: production` will say it cannot warm-start from it."""
    model = read_manifest(bundle).get("model") or {}
    if not model.get("source_stage"):
        attached, why = {}, "its manifest names no source stage"
    else:
        attached, why = checkpoint_attachment(model, stage_dir(model["source_stage"]) / MODEL_DIR)
    if why:
        log.warning("promote: %s is published without its checkpoint: %s", bundle, why)
    return attached


def _canary(ctx: StageContext, out, bundle, decision) -> dict[str, Any]:
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
            log.warning("promote %s", result["status"])
            return result
    evaluation = read_json(ctx.require("evaluate") / METRICS_JSON)
    lineage, attachments = _lineage(ctx, decision)
    state = start_canary(ctx.params, root, bundle, evaluation=evaluation, decision=decision, lineage=lineage,
                         attachments=attachments)
    result.update(status=f"canary started: {state['candidate']} against {state['production']}",
                  version=state["candidate"], canary_id=state["id"], notify=state["notify"]["status"])
    log.info("promote: %s (notify %s)", result["status"], state["notify"]["status"])
    return result
