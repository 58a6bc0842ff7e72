"""Starting and deciding a canary from params: the registry's state, serving's logs, the rule, the notices.

`uniret canary` and the promote stage (canary.enabled: the nightly and the Kubeflow pipeline) both go
through here. Deciding reads the interleaved impressions logged since the canary began
(feedback.log_dir), applies params canary.rule and ends the canary through the registry
(uniret.registry.canary): promote (the pointer moves, serving is told to reload) or roll back
(production stays, the candidate's content is rejected). The decision is written beside the gate's:
<out>/decision.json and decision.md.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from uniret.config.params import Params
from uniret.config.paths import resolve_path
from uniret.interleaving import decide, preference
from uniret.interleaving.decision import WAIT
from uniret.interleaving.from_logs import canary_traffic
from uniret.registry import canary as registry_canary
from uniret.registry.configured import serving_from
from uniret.registry.notify import notify_canary, notify_reload
from uniret.utils.files import atomic_write_json, atomic_write_text

log = logging.getLogger("uniret.canary")


def start_canary(params: Params, root: Path, bundle: Path, *, evaluation: dict[str, Any] | None = None,
                 decision: dict[str, Any] | None = None, lineage: dict[str, Any] | None = None,
                 serve_url: str | None = None, attachments: dict[str, Path] | None = None) -> dict[str, Any]:
    """Start the canary of bundle folder `bundle` and tell serving (POST /admin/canary); returns the state.
    Refused (nothing written) when serving logs no answers: the canary would have no evidence."""
    canary_log_dir(params)
    state = registry_canary.start(root, bundle, params.section("canary"), evaluation=evaluation, decision=decision,
                                  lineage=lineage or {}, attachments=attachments)
    serving = serving_from(params, serve_url)
    state["notify"] = notify_canary(serving.url, serving.token, serving.timeout_s).to_dict()
    log.info("canary %s started: candidate %s against production %s, %.0f%% of searches interleaved",
             state["id"], state["candidate"], state["production"], 100 * state["share"])
    return state


def canary_log_dir(params: Params) -> Path:
    """The UBI log folder serving writes (params feedback.log_dir); a canary cannot run without it."""
    log_dir = params.section("feedback").log_dir
    if not log_dir:
        raise ValueError("feedback.log_dir is null: serving logs no answers, so a canary has no evidence "
                         "(set it, docs/learning-loop.md#logging)")
    return resolve_path(params, log_dir)


def assess(params: Params, state: dict[str, Any]) -> dict[str, Any]:
    """The running canary's evidence so far and what the rule says of it (nothing changes)."""
    traffic = canary_traffic(canary_log_dir(params), state["id"], state["started_at"][:10])
    pref = preference(traffic.outcomes, state["alpha"])
    verdict = decide(pref, state["rule"], state["min_impressions"], registry_canary.expired(state))
    return {"canary": state["id"], "candidate": state["candidate"], "production": state["production"],
            "rule": state["rule"], "traffic": traffic.to_dict(), **verdict.to_dict()}


def decide_canary(params: Params, root: Path, out: Path | None = None, serve_url: str | None = None) -> dict[str, Any]:
    """Assess the running canary and, unless the rule says wait, end it; returns the decision
    (written to `out`/decision.json and decision.md when `out` is given)."""
    state = registry_canary.running(root)
    if state is None:
        raise ValueError(f"{root}: no canary is running (`uniret canary status` shows the last one)")
    decision = assess(params, state)
    if decision["action"] != WAIT:
        ended = registry_canary.finish(root, decision["action"], decision["reason"], decision["preference"])
        decision["status"] = ended["status"]
        if ended["status"] == registry_canary.ABANDONED:
            decision["reason"] = ended["reason"]  # production moved under the canary
        serving = serving_from(params, serve_url)
        if ended["status"] == registry_canary.PROMOTED:
            decision["notify"] = notify_reload(serving.url, serving.token, ended["candidate"], serving.timeout_s).to_dict()
        else:
            decision["notify"] = notify_canary(serving.url, serving.token, serving.timeout_s).to_dict()
    else:
        decision["status"] = registry_canary.RUNNING
    if out is not None:
        write_decision(out, decision)
    log.info("canary %s: %s (%s)", decision["canary"], decision["status"], decision["reason"])
    return decision


def write_decision(out: Path, decision: dict[str, Any]) -> None:
    """decision.json and a short decision.md (what on-call reads) under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "decision.json", decision)
    pref = decision["preference"]
    lines = [f"# Canary {decision['canary']}: {decision['status']}", "",
             f"- candidate {decision['candidate']} against production {decision['production']} "
             f"(rule {decision['rule']}, alpha {pref['alpha']})",
             f"- {pref['clicked']} clicked interleaved impressions of {pref['impressions']} "
             f"({pref['queries']} queries): {pref['wins']} wins, {pref['ties']} ties, {pref['losses']} losses",
             f"- delta {pref['delta']:+.4f}, one-sided bounds {pref['lower']:+.4f} .. {pref['upper']:+.4f}",
             f"- reason: {decision['reason']}", ""]
    atomic_write_text(out / "decision.md", "\n".join(lines))
