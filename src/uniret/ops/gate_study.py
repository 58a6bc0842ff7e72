"""How often does the gate block an equal retrain, and which losses does it miss? The error-rate study.

Raw files (committed under results/gate/, one folder per evaluated candidate):

    candidates.json              {name: {"kind": "equal" | "worse" | "better", "what": "...", "system": ...}}
    runs/<name>/<dataset>.json   {query: the gate metric}, the candidate's per-query test scores

`uniret gate-study add` copies a candidate's scores from an evaluate output; `uniret gate-study run`
gates every pair with the real gate code (uniret.registry.gate.regression_checks) under both rules,
the point `threshold` rule and the `paired` one, and writes study.json and study.md:

- equal pairs: every ordered pair of `equal` candidates, each as production and as candidate: a
  block is a false block;
- worse and better candidates against every equal one, and every equal one against each worse one as
  production (a better candidate: a real improvement must pass): the true difference (point
  difference) and whether each rule blocked;
- the smallest loss each rule catches 95% of the time, per dataset and pooled, simulated from the
  equal pairs' per-query differences (uniret.evaluation.noninferiority.detectable_loss; for the
  threshold rule the same simulation with its bound, the point difference, against max_regression).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np

from uniret.config.gate import GateConfig
from uniret.core.errors import DataError, DataProblem
from uniret.core.jsonio import read_json
from uniret.evaluation.compare_systems import read_per_query
from uniret.evaluation.macros import zero_shot_datasets
from uniret.evaluation.noninferiority import detectable_loss
from uniret.registry.gate import ProductionRef, regression_checks
from uniret.utils.files import atomic_write_json, atomic_write_text

CANDIDATES = "candidates.json"
RUNS = "runs"
KINDS = ("equal", "worse", "better")
RULES = ("threshold", "paired")
POOLED = "pooled"


def add_candidate(root: Path, name: str, kind: str, what: str, evaluated: Path, system: str, metric: str) -> dict:
    """Copy `system`'s per-query `metric` from an evaluate output into root/runs/<name>/ and list it."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    # the name becomes one folder under root/runs: nothing that climbs out of root or hides
    if not name or name in (".", "..") or name.startswith(".") or "/" in name or "\\" in name:
        raise DataError(DataProblem(root / RUNS, None, "name", f"{name!r} is not one folder name here "
                                    "(no '/', no leading '.'); nothing was written"))
    path = root / CANDIDATES
    listed = read_json(path) if path.is_file() else {}
    if not isinstance(listed, dict):
        raise DataError(DataProblem(path, None, None, "expected {name: {kind, what, system, metric}}"))
    if name in listed or (root / RUNS / name).exists():
        raise DataError(DataProblem(path, None, name, f"candidate {name!r} already exists ({root / RUNS / name}); "
                                    "committed candidates are not replaced: choose another name; nothing was written"))
    metrics = read_json(evaluated / "metrics.json")
    datasets = sorted(metrics.get("datasets") or {}) if isinstance(metrics, dict) else []
    if not datasets:
        raise DataError(DataProblem(evaluated / "metrics.json", None, "datasets", "no evaluated datasets"))
    # every file read and checked before the first is written: a refusal leaves no orphan folder
    scores = {dataset: read_per_query(evaluated, system, dataset, metric) for dataset in datasets}
    for dataset, rows in scores.items():
        atomic_write_json(root / RUNS / name / f"{dataset}.json", rows)
    listed[name] = {"kind": kind, "what": what, "system": system, "metric": metric}
    atomic_write_json(path, dict(sorted(listed.items())))
    return listed[name]


def _numbers(path: Path) -> dict[str, float]:
    """{query: value} of one raw per-query file; DataError naming the file and query for a non-number."""
    rows = read_json(path)
    if not isinstance(rows, dict):
        raise DataError(DataProblem(path, None, None, "expected {query: number}"))
    for query, value in rows.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise DataError(DataProblem(path, None, query, f"must be a finite number, got {value!r:.40}"))
    return {q: float(v) for q, v in rows.items()}


def load_candidates(root: Path) -> tuple[dict[str, dict], dict[str, dict[str, dict[str, float]]]]:
    """(candidates.json, {name: {dataset: {query: value}}}) from the raw files."""
    path = root / CANDIDATES
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found; add candidates with `uniret gate-study add`")
    listed = read_json(path)
    scores = {}
    for name, entry in listed.items():
        if entry.get("kind") not in KINDS:
            raise DataError(DataProblem(path, None, f"{name}.kind", f"must be one of {', '.join(KINDS)}"))
        folder = root / RUNS / name
        files = sorted(folder.glob("*.json"))
        if not files:
            raise FileNotFoundError(f"{folder}: no per-query files of candidate {name!r}")
        scores[name] = {f.stem: _numbers(f) for f in files}
    return listed, scores


def _metrics(queries: dict[str, dict[str, float]], system: str, metric: str) -> dict:
    return {"datasets": {d: {system: {metric: float(np.mean(list(rows.values())))}} for d, rows in queries.items()}}


def gate_pair(cfg: GateConfig, production: dict, candidate: dict, train_dataset: str) -> dict[str, Any]:
    """Both rules' regression verdicts of `candidate` against `production` ({dataset: {query: value}})."""
    system, metric = cfg.candidate_system, cfg.metric
    prod = ProductionRef("production", _metrics(production, system, metric), system, kind="rescored", queries=production)
    out = {}
    for rule in RULES:
        rule_cfg = dataclasses.replace(cfg, regression_rule=rule)
        checks = regression_checks(rule_cfg, _metrics(candidate, system, metric), prod, candidate, train_dataset)
        failed = [c.dataset or POOLED for c in checks if c.status == "fail"]
        out[rule] = {"blocked": bool(failed), "by": failed}
    return out


def _loss(production: dict, candidate: dict, datasets: list[str]) -> float:
    return float(np.mean([np.mean([candidate[d][q] - production[d][q] for q in production[d]]) for d in datasets]))


def _diffs(a: dict, b: dict, dataset: str) -> np.ndarray:
    return np.array([b[dataset][q] - a[dataset][q] for q in sorted(a[dataset])])


def retrain_noise(equal: dict[str, dict], datasets: list[str], zero_shot: list[str]) -> dict[str, dict[str, float]]:
    """Per dataset (and the zero-shot macro): the standard deviation of the equal retrains' means
    (sample, ddof 1) and the margin it implies, 1.645 x sqrt(2) x sd rounded up to 0.001: a loss two equal
    retrains exceed one way only 5% of the time by retraining noise alone (normal approximation), so a
    margin that size keeps the paired rule from blocking a retrain for its seed (E50)."""
    if len(equal) < 3:
        return {}
    means = {d: np.array([np.mean(list(s[d].values())) for s in equal.values()]) for d in datasets}
    if zero_shot:
        means["zero_shot_macro"] = np.mean([means[d] for d in zero_shot], axis=0)
    out = {}
    for key, values in means.items():
        sd = float(np.std(values, ddof=1))
        out[key] = {"sd": round(sd, 5), "range": round(float(np.ptp(values)), 5),
                    "margin": math.ceil(1.645 * math.sqrt(2) * sd * 1000 - 1e-9) / 1000}
    return out


def study(root: Path, cfg: GateConfig, train_dataset: str) -> dict[str, Any]:
    """Gate every pair (see the module doc) and simulate the detectable losses."""
    listed, scores = load_candidates(root)
    cfg = dataclasses.replace(cfg, candidate_system=cfg.candidate_system or "served")
    equal = [n for n, e in listed.items() if e["kind"] == "equal"]
    datasets = sorted(set.intersection(*(set(s) for s in scores.values())))
    zero_shot = zero_shot_datasets(datasets, train_dataset)
    pairs = []
    for prod, cand in itertools.permutations(equal, 2):
        pairs.append({"production": prod, "candidate": cand, **gate_pair(cfg, scores[prod], scores[cand], train_dataset)})
    others = []
    # a worse or better candidate against each equal one; and each equal one against a worse production
    # (a real improvement, the nightly after a bad model shipped: it must pass)
    made = [(n, e["kind"]) for n, e in listed.items() if e["kind"] != "equal"]
    matches = [(prod, cand, kind) for cand, kind in made for prod in equal]
    matches += [(prod, cand, "better") for prod, kind in made if kind == "worse" for cand in equal]
    for prod, cand, kind in matches:
        verdicts = gate_pair(cfg, scores[prod], scores[cand], train_dataset)
        loss = {"zero_shot_macro": _loss(scores[prod], scores[cand], zero_shot),
                **{d: _loss(scores[prod], scores[cand], [d]) for d in datasets}}
        others.append({"production": prod, "candidate": cand, "kind": kind,
                       "diff": {k: round(v, 5) for k, v in loss.items()}, **verdicts})
    detectable: dict[str, dict[str, float]] = {}
    if len(equal) >= 2:
        groups = {**{d: [d] for d in datasets}, POOLED: zero_shot}
        for name, members in groups.items():
            if not members:
                continue
            margin = cfg.pooled_margin if name == POOLED else cfg.margin(name)
            found = {"paired": [], "threshold": []}
            for a, b in itertools.combinations(equal, 2):
                diffs = {d: _diffs(scores[a], scores[b], d) for d in members}
                found["paired"].append(detectable_loss(diffs, margin, cfg.regression_confidence))
                # the point rule judges each set alone; pooled it has no rule, so only per dataset
                if name != POOLED:
                    # its bound is the point difference itself: the one-sided bound at confidence 0.5
                    found["threshold"].append(detectable_loss(diffs, cfg.max_regression, confidence=0.5))
            detectable[name] = {rule: round(float(np.mean(v)), 4) for rule, v in found.items() if v}
    summary = {rule: {"equal_pairs": len(pairs), "false_blocks": sum(p[rule]["blocked"] for p in pairs),
                      "worse_pairs": sum(o["kind"] == "worse" for o in others),
                      "worse_blocked": sum(o["kind"] == "worse" and o[rule]["blocked"] for o in others),
                      "better_pairs": sum(o["kind"] == "better" for o in others),
                      "better_blocked": sum(o["kind"] == "better" and o[rule]["blocked"] for o in others)}
               for rule in RULES}
    return {"candidates": listed, "datasets": datasets, "zero_shot": zero_shot, "summary": summary,
            "equal_pairs": pairs, "other_pairs": others, "detectable_loss_95": detectable,
            "noise": retrain_noise({n: scores[n] for n in equal}, datasets, zero_shot),
            "gate": {k: v for k, v in dataclasses.asdict(cfg).items() if k.startswith(("regression", "max_regression",
                                                                                     "pooled"))}}


def render(doc: dict[str, Any]) -> str:
    """study.md: the error rates of both rules, each pair, and the detectable losses."""
    lines = ["# Gate error-rate study", "", "Generated by `uniret gate-study run` from candidates.json and runs/.", "",
             "| rule | equal pairs blocked | worse blocked | better blocked |", "| --- | ---: | ---: | ---: |"]
    for rule in RULES:
        s = doc["summary"][rule]
        lines.append(f"| {rule} | {s['false_blocks']} / {s['equal_pairs']} | {s['worse_blocked']} / {s['worse_pairs']} "
                     f"| {s['better_blocked']} / {s['better_pairs']} |")
    lines += ["", "## Smallest loss caught 95% of the time (simulated from the equal pairs' per-query differences)", "",
              "| set | paired | threshold |", "| --- | ---: | ---: |"]
    found = doc["detectable_loss_95"]
    for name in (n for n in [*doc["datasets"], POOLED] if n in found):
        v = found[name]
        lines.append(f"| {name} | {v.get('paired', '–')} | {v.get('threshold', '–')} |")
    if doc.get("noise"):
        lines += ["", "## Retraining noise: the equal candidates' means", "",
                  "sd: their standard deviation; margin: 1.645 x sqrt(2) x sd, a loss two equal retrains exceed "
                  "one way 5% of the time (the margin the paired rule needs not to block a retrain for its seed).",
                  "", "| set | sd | range | margin |", "| --- | ---: | ---: | ---: |"]
        for name, row in doc["noise"].items():
            lines.append(f"| {name} | {row['sd']:.4f} | {row['range']:.4f} | {row['margin']:.3f} |")
    lines += ["", "## Worse and better candidates against each equal one (better: also each equal one against a worse "
              "production)", "",
              "| candidate | kind | production | zero-shot macro diff | " + " | ".join(f"{d} diff" for d in doc["datasets"])
              + " | threshold | paired |", "|" + " --- |" * (6 + len(doc["datasets"]))]
    for o in doc["other_pairs"]:
        cells = [o["candidate"], o["kind"], o["production"], f"{o['diff']['zero_shot_macro']:+.4f}",
                 *(f"{o['diff'][d]:+.4f}" for d in doc["datasets"]),
                 *(("blocked: " + ", ".join(o[r]["by"])) if o[r]["blocked"] else "passed" for r in RULES)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Equal pairs", "", "| production | candidate | threshold | paired |", "| --- | --- | --- | --- |"]
    for p in doc["equal_pairs"]:
        cells = [("blocked: " + ", ".join(p[r]["by"])) if p[r]["blocked"] else "passed" for r in RULES]
        lines.append(f"| {p['production']} | {p['candidate']} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def write_study(root: Path, doc: dict[str, Any]) -> None:
    atomic_write_json(root / "study.json", doc)
    atomic_write_text(root / "study.md", render(doc))
