"""The gate's "newest traffic" check: candidate vs production on the feedback stage's held-out day.

The evaluate stage scores both bundles' served modes on the newest closed day of serving logs
(uniret.evaluation.newest_traffic); here the two are paired per query under the rule the gate's
regression check uses (uniret.evaluation.noninferiority): blocked only when the candidate is worse,
with gate.regression_confidence, by more than gate.newest_traffic.margin. Skipped, with the reason,
without logs, on a cold start, when production indexes another corpus, or when turned off; failed
when production's scores cannot be had or are not the live bundle's (a candidate is never waved
through on figures it was not compared with).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from uniret.config.gate import GateConfig
from uniret.evaluation.noninferiority import noninferiority
from uniret.registry.checks import Check

NAME = "newest_traffic"
SKIPPED_STATUSES = ("none", "other_corpus")  # production's statuses that skip the check (evaluate's words)


@dataclass
class TrafficScores:
    """What evaluate wrote on the newest traffic: its metrics.json section and, when it scored both
    sides, their per-query values of the configured judgments and metric ({query: value})."""

    section: dict[str, Any]
    candidate: dict[str, float] | None = None
    production: dict[str, float] | None = None
    unreadable: str = ""  # why the per-query values could not be read


def _skip(reason: str, margin: float) -> Check:
    return Check(NAME, None, None, -margin, "skipped", reason)


def _fail(reason: str, margin: float, dataset: str | None = None) -> Check:
    return Check(NAME, dataset, None, -margin, "fail", reason)


def newest_traffic_check(cfg: GateConfig, traffic: TrafficScores, production: str | None) -> Check:
    """One check against the live bundle's version `production` (None: a cold start): pass, fail or
    skipped with its reason (module doc)."""
    nt = cfg.newest_traffic
    if not nt.enabled:
        return _skip("off (gate.newest_traffic.enabled is false)", nt.margin)
    section = traffic.section
    if section.get("status") != "scored":
        return _skip(f"no newest traffic: {section.get('reason') or 'not scored'}", nt.margin)
    prod = section.get("production") or {}
    status, version = prod.get("status"), prod.get("version")
    if production is None:
        if status == "none":
            return _skip("cold start: no production bundle", nt.margin)
        return _fail(f"evaluate scored production {version} on the newest traffic, but there is no production "
                     "bundle now: rerun evaluate", nt.margin)
    if status == "none" or (version is not None and version != production):
        return _fail(f"evaluate scored production {version or '(none)'} on the newest traffic; production is now "
                     f"{production}: rerun evaluate", nt.margin)
    if status in SKIPPED_STATUSES:
        return _skip(str(prod.get("reason")), nt.margin)
    if status != "scored":
        return _fail(str(prod.get("reason") or f"production's newest-traffic status is {status!r}"), nt.margin)
    candidate = (section.get("candidate") or {}).get("system")
    if candidate != cfg.candidate_system:
        return _fail(f"evaluate scored {candidate!r} on the newest traffic, the gate judges {cfg.candidate_system!r}: "
                     "rerun evaluate", nt.margin)
    day = f"held-out day {section.get('day')}"
    if traffic.candidate is None or traffic.production is None:
        return _fail(f"{day}: per-query scores unreadable: {traffic.unreadable}", nt.margin, day)
    if set(traffic.candidate) != set(traffic.production):
        return _fail(f"{day}: candidate and production were scored on different queries", nt.margin, day)
    if len(traffic.candidate) < 2:
        return _skip(f"{day}: {len(traffic.candidate)} query with a positive {nt.judgments} judgment; "
                     "a paired interval needs 2", nt.margin)
    qids = sorted(traffic.candidate)
    sets = {NAME: ([traffic.production[q] for q in qids], [traffic.candidate[q] for q in qids])}
    test = noninferiority(sets, nt.margin, cfg.regression_confidence, cfg.regression_resamples)
    verdict = "worse beyond" if test.worse else "not worse beyond"
    reason = (f"{day}, {nt.judgments} judgments, {nt.metric}: candidate - production {production} "
              f"{test.interval_text()} ({2 * cfg.regression_confidence - 1:.0%} interval, {test.queries} queries): "
              f"{verdict} margin {nt.margin:g} with {cfg.regression_confidence:.0%} confidence")
    return Check(NAME, day, test.diff, -nt.margin, "fail" if test.worse else "pass", reason,
                 (test.low, test.high), "paired")
