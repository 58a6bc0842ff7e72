"""The gate's newest-traffic check held against the truth the simulator knows.

Each night the evaluate stage scores the candidate and production on the held-out day's logged queries
with click-derived judgments, which cover only the documents production showed that day: all a real
deployment has. In simulation those clicks were drawn from the traffic domain's train qrels, so the same
two runs (kept by the loop under nights/<n>/newest_traffic/runs/) can also be scored on those grades:
whether the candidate ranks better for that day's users. Per night, candidate - production on the
truth and on each metric the check can pair (the full list, the condensed list), each under the gate's
paired rule (gate.newest_traffic.margin, gate.regression_confidence): a check that blocks where the truth
says "not worse" blocks learning, one that passes where the truth says "worse" ships a regression. The
gate's judgment set gives the table; every set the night kept (click_model, coec, ips) is paired on the
same runs under by_judgments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from uniret.config.gate import GateConfig
from uniret.core.runs import Run, read_run
from uniret.evaluation.graded import graded_ndcg
from uniret.evaluation.heldout import HELDOUT_QUERIES, read_queries
from uniret.evaluation.newest_traffic import METRICS, PRODUCTION_SYSTEM, RUNS_DIR
from uniret.evaluation.noninferiority import noninferiority
from uniret.evaluation.outputs import PER_QUERY_DIR

TRUTH = "truth"  # nDCG@10 on the traffic's own qrels (the simulator's grades), the full list
TRUTH_K = 10
CANDIDATE = "candidate"  # compare_day's name for the side that is not production
NEWEST = "newest_traffic"  # what the loop keeps of the evaluate stage's newest_traffic/ per night
HELDOUT = "heldout"  # and of the feedback stage's heldout/


def truth_qrels(day: dict[str, str], qrels: dict[str, dict[str, int]], texts: dict[str, str]) -> dict[str, dict[str, float]]:
    """The held-out day's queries ({key: text}, keyed as its logs key them) with the traffic's grades, for
    the queries whose text names exactly one judged query of the dataset (a text two queries share is left out)."""
    by_text: dict[str, list[str]] = {}
    for qid, text in texts.items():
        if qid in qrels:
            by_text.setdefault(text, []).append(qid)
    return {key: {d: float(g) for d, g in qrels[ids[0]].items()}
            for key, text in day.items() if len(ids := by_text.get(text, [])) == 1}


def read_day(keep: Path) -> dict[str, str]:
    """The held-out day's queries a night kept."""
    return read_queries(keep / HELDOUT / Path(HELDOUT_QUERIES).name)


def compare(production: dict[str, float], candidate: dict[str, float], gate: GateConfig) -> dict[str, Any]:
    """Candidate - production on their common queries under the newest-traffic check's paired rule."""
    qids = sorted(set(production) & set(candidate))
    test = noninferiority({"day": ([production[q] for q in qids], [candidate[q] for q in qids])},
                          gate.newest_traffic.margin, gate.regression_confidence, gate.regression_resamples)
    return test.as_dict(4)


def compare_checks(checked: dict[str, dict[str, dict[str, float]]], gate: GateConfig) -> dict[str, Any]:
    """Candidate - production on each check metric (`checked`: each side's per-query values on one judgment
    set of the day, {"production" | "candidate": {query: {metric: v}}}); {} when the set judged no query
    (e.g. ips on a night whose training days gave no propensities)."""
    sides = (PRODUCTION_SYSTEM, CANDIDATE)
    if not set(checked[PRODUCTION_SYSTEM]) & set(checked[CANDIDATE]):
        return {}
    return {metric: compare(*({q: v[metric] for q, v in checked[s].items()} for s in sides), gate) for metric in METRICS}


def compare_day(runs: dict[str, Run], checked: dict[str, dict[str, dict[str, dict[str, float]]]],
                truth: dict[str, dict[str, float]], gate: GateConfig) -> dict[str, Any] | None:
    """Candidate - production on one held-out day: on the truth (their `runs`, {"production" | "candidate":
    run}), on each check metric of the gate's judgment set, and under `by_judgments` on every set of `checked`
    ({judgments: each side's per-query values}); None when the gate's set judged no query that day."""
    by = {name: compare_checks(c, gate) for name, c in checked.items()}
    gated = gate.newest_traffic.judgments
    if not by.get(gated):
        return None
    sides = (PRODUCTION_SYSTEM, CANDIDATE)
    return {"judgments": gated, TRUTH: compare(*(graded_ndcg(truth, runs[s], TRUTH_K) for s in sides), gate),
            **by[gated], "by_judgments": by}


def night_comparison(keep: Path, qrels: dict[str, dict[str, int]], texts: dict[str, str],
                     gate: GateConfig) -> dict[str, Any] | None:
    """Candidate - production on the night's held-out day: on the truth and on each check metric of the
    gate's judgments, each with the gate's verdict, and under `by_judgments` on every judgment set the
    night kept (the same runs); None when the night kept no scored newest traffic on the gate's judgments."""
    folder = keep / NEWEST
    systems = sorted(p.stem for p in (folder / RUNS_DIR).glob("*.trec")) if (folder / RUNS_DIR).is_dir() else []
    if PRODUCTION_SYSTEM not in systems or len(systems) != 2 or not (keep / HELDOUT).is_dir():
        return None
    candidate = next(s for s in systems if s != PRODUCTION_SYSTEM)
    side = {PRODUCTION_SYSTEM: PRODUCTION_SYSTEM, candidate: CANDIDATE}
    runs = {side[s]: read_run(folder / RUNS_DIR / f"{s}.trec") for s in systems}
    kept = sorted(p.stem for p in (folder / PER_QUERY_DIR / PRODUCTION_SYSTEM).glob("*.json"))
    checked = {name: {side[s]: json.loads((folder / PER_QUERY_DIR / s / f"{name}.json").read_text()) for s in systems}
               for name in kept}
    day = compare_day(runs, checked, truth_qrels(read_day(keep), qrels, texts), gate)
    return {"candidate_system": candidate, **day} if day else None


def agreement(nights: list[dict[str, Any]], judgments: str | None = None) -> dict[str, dict[str, int]]:
    """Per check metric (of the gate's judgments, or of `judgments` under each night's by_judgments): nights
    where the check and the truth give the same verdict, the check blocks a candidate the truth does not find
    worse (learning lost), and passes one the truth finds worse."""
    out = {}
    for metric in METRICS:
        rows = [(c, n[TRUTH]) for n in nights
                if (c := (n if judgments is None else (n.get("by_judgments") or {}).get(judgments, {})).get(metric))]
        out[metric] = {"nights": len(rows),
                       "agree": sum(c["worse"] == t["worse"] for c, t in rows),
                       "blocked_not_worse": sum(c["worse"] and not t["worse"] for c, t in rows),
                       "passed_worse": sum(not c["worse"] and t["worse"] for c, t in rows)}
    return out


def agreements(nights: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """agreement() for every judgment set some night kept, {judgments: {metric: counts}}."""
    names = sorted({name for n in nights for name in n.get("by_judgments") or {}})
    return {name: agreement(nights, name) for name in names}


def markdown(entry: dict[str, Any]) -> list[str]:
    """The report's lines for one arm's `traffic_check` section ([] without one)."""
    nights = entry.get("nights") or []
    if not nights:
        return []
    first = nights[0]
    lines = ["", f"The gate's newest-traffic check against the truth ({first['judgments']} judgments of each held-out "
                 "day; truth: nDCG@10 on the traffic's train qrels, which drew the clicks). Candidate - production, "
                 f"one-sided {first[TRUTH]['confidence']:.0%} bound, margin {first[TRUTH]['margin']}; "
                 "**blocks**: the gate's paired rule finds the candidate worse:", "",
             "| night | truth | full list (ndcg@10) | condensed list (condensed_ndcg@10) |", "|---|---|---|---|"]

    def cell(c: dict[str, Any]) -> str:
        return f"{c['diff']:+.4f} ({c['low']:+.4f} .. {c['high']:+.4f}, {c['queries']} q)" + (" **blocks**" if c["worse"] else "")

    for n in nights:
        lines.append(f"| {n['night']} | {cell(n[TRUTH])} | {cell(n[METRICS[0]])} | {cell(n[METRICS[1]])} |")
    for metric, a in entry["agreement"].items():
        lines.append(f"\n{metric}: the same verdict as the truth on {a['agree']} of {a['nights']} nights; blocked a "
                     f"candidate the truth does not find worse on {a['blocked_not_worse']}, passed one it finds worse "
                     f"on {a['passed_worse']}.")
    if by := entry.get("by_judgments"):
        lines += ["", "Every judgment set of the day, the same runs (ips: the IPS click rate, the counterfactual one):", "",
                  "| judgments | metric | same verdict as the truth | blocked, truth not worse | passed, truth worse |",
                  "|---|---|---|---|---|"]
        lines += [f"| {name} | {metric} | {a['agree']} of {a['nights']} | {a['blocked_not_worse']} | {a['passed_worse']} |"
                  for name, per in by.items() for metric, a in per.items()]
    return lines
