"""The regression report's content: candidate vs production vs baseline, as rows and as markdown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CANDIDATE, PRODUCTION, BASELINE = "candidate", "production", "baseline"


@dataclass
class Comparison:
    """Values of one metric per dataset for the candidate, the production bundle and the baseline."""

    metric: str
    candidate: str  # system names, for labels
    baseline: str
    production: str | None  # production bundle version; None on cold start
    rows: dict[str, dict[str, float | None]] = field(default_factory=dict)  # dataset -> role -> value
    macro: dict[str, float | None] = field(default_factory=dict)  # role -> value

    def labels(self) -> dict[str, str]:
        """Legend label of each role present."""
        out = {CANDIDATE: f"candidate ({self.candidate})"}
        if self.production:
            out[PRODUCTION] = f"production ({self.production})"
        out[BASELINE] = self.baseline
        return out


def _value(table: dict[str, Any] | None, system: str, metric: str) -> float | None:
    value = ((table or {}).get(system) or {}).get(metric)
    return None if value is None else float(value)


def compare(
    metrics: dict[str, Any],
    *,
    metric: str,
    candidate: str,
    baseline: str,
    production: tuple[str, dict[str, Any], str] | None,
    macro_key: str = "macro",
) -> Comparison:
    """Build the comparison; `production` is (version, its stored metrics.json, its system) or None."""
    prod_version, prod_metrics, prod_system = production if production else (None, {}, "")
    cmp = Comparison(metric, candidate, baseline, prod_version)
    prod_sets = prod_metrics.get("datasets") or {}
    for ds, systems in sorted((metrics.get("datasets") or {}).items()):
        row = {CANDIDATE: _value(systems, candidate, metric), BASELINE: _value(systems, baseline, metric)}
        if prod_version:
            row[PRODUCTION] = _value(prod_sets.get(ds), prod_system, metric)
        cmp.rows[ds] = row
    macro = metrics.get(macro_key) or {}
    cmp.macro = {CANDIDATE: _value(macro, candidate, metric), BASELINE: _value(macro, baseline, metric)}
    if prod_version:
        cmp.macro[PRODUCTION] = _value(prod_metrics.get(macro_key), prod_system, metric)
    return cmp


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def _delta(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None else f"{a - b:+.4f}"


def comparison_table(cmp: Comparison) -> list[str]:
    """Markdown table: one row per dataset plus the macro average, with deltas."""
    has_prod = cmp.production is not None
    head = ["dataset", f"candidate ({cmp.candidate})"]
    head += ["production", "Δ vs production"] if has_prod else []
    head += [cmp.baseline, f"Δ vs {cmp.baseline}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for ds, row in [*cmp.rows.items(), ("**macro**", cmp.macro)]:
        cand = row.get(CANDIDATE)
        cells = [ds, _num(cand)]
        if has_prod:
            cells += [_num(row.get(PRODUCTION)), _delta(cand, row.get(PRODUCTION))]
        cells += [_num(row.get(BASELINE)), _delta(cand, row.get(BASELINE))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def systems_table(metrics: dict[str, Any], systems: list[str]) -> list[str]:
    """Markdown table of every metric of the given systems on every dataset."""
    names: list[str] = []
    for per_system in (metrics.get("datasets") or {}).values():
        for system in systems:
            names += [m for m in (per_system.get(system) or {}) if m not in names]
    if not names:
        return ["(no metrics for " + ", ".join(systems) + ")"]
    lines = ["| dataset | system | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 2)]
    for ds, per_system in sorted((metrics.get("datasets") or {}).items()):
        for system in systems:
            values = per_system.get(system)
            if values:
                lines.append(f"| {ds} | {system} | " + " | ".join(_num(values.get(n)) for n in names) + " |")
    return lines


def gate_lines(decision: dict[str, Any] | None, absent: str | None) -> list[str]:
    """The gate's verdict and failed checks, or why there is none."""
    if decision is None:
        return [f"No gate decision: {absent}."]
    verdict = "**PASSED**" if decision.get("passed") else "**BLOCKED**"
    checks = decision.get("checks") or []
    skipped = [c for c in checks if c.get("status") == "skipped"]
    lines = [f"Gate: {verdict} ({len(checks)} checks, {len(skipped)} skipped)."]
    lines += [f"- fail: {c['name']}: {c['reason']}" for c in checks if c.get("status") == "fail"]
    lines += [f"- skipped: {c['name']}: {c['reason']}" for c in skipped]
    return lines


def newest_traffic_lines(section: dict[str, Any] | None) -> list[str]:
    """The served modes of candidate and production on the feedback stage's held-out day (metrics.json
    "newest_traffic", uniret.evaluation.newest_traffic), or why they were not scored; [] without the section."""
    if not isinstance(section, dict):
        return []
    head = ["## Newest traffic", ""]
    if section.get("status") != "scored":
        return [*head, f"Not scored: {section.get('reason')}.", ""]
    judgments = sorted((section.get("candidate") or {}).get("scores") or {})
    metrics = section.get("metrics") or []
    rows = [(f"candidate ({section['candidate'].get('system')})", section["candidate"].get("scores") or {})]
    prod = section.get("production") or {}
    lines = [*head, f"Held-out day {section.get('day')}: {section.get('queries')} logged queries; each metric on "
             "click-derived judgments (graded gains), over the queries with a positive judgment "
             "(condensed_: unjudged documents removed; judged@10: the share of the top 10 with a judgment).", "",
             "| system | " + " | ".join(f"{j} {m}" for j in judgments for m in metrics) + " | queries |",
             "|" + "---|" * (len(judgments) * len(metrics) + 2)]
    if prod.get("status") == "scored":
        rows.append((f"production ({prod.get('version')}, {prod.get('system')})", prod.get("scores") or {}))
    for label, scores in rows:
        cells = [_num((scores.get(j) or {}).get(m)) for j in judgments for m in metrics]
        counts = "/".join(str((scores.get(j) or {}).get("queries", 0)) for j in judgments)
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {counts} |")
    if prod.get("status") != "scored":
        lines += ["", f"Production not scored: {prod.get('reason')}."]
    return [*lines, ""]


def render(
    cmp: Comparison,
    metrics: dict[str, Any],
    *,
    profile: str,
    decision: dict[str, Any] | None,
    decision_absent: str | None,
    figures: dict[str, str],
    notes: list[str],
    wandb: dict[str, Any],
    stage_seconds: dict[str, float] | None = None,
    intervals: list[str] | None = None,
    production_intervals: list[str] | None = None,
    production_note: str | None = None,
    paused: str | None = None,
    tonight: str | None = None,
) -> str:
    """The whole report.md; `intervals` / `production_intervals`: markdown lines of the candidate vs
    the baseline / vs production with bootstrap intervals (uniret.evaluation.compare_systems), shown
    under the per-dataset table; `production_note`: where production's scores came from; `paused`:
    why promotion is paused (a line under the gate's), None when it is not; `tonight`: what the promote
stage did with this decision (promoted, held, the corpus refresh), None when it has not run for it."""
    lines = [
        "# uniret regression report",
        "",
        f"- profile: `{profile}`",
        f"- candidate: `{cmp.candidate}`; baseline: `{cmp.baseline}`; "
        f"production: `{cmp.production or 'none (cold start)'}`" + (f" ({production_note})" if production_note else ""),
        "",
        "## Gate",
        "",
        *gate_lines(decision, decision_absent),
        *([f"- **paused**: {paused}"] if paused else []),
        *([f"- **tonight**: {tonight}"] if tonight else []),
        "",
        *newest_traffic_lines(metrics.get("newest_traffic")),
        f"## {cmp.metric} per dataset",
        "",
        *comparison_table(cmp),
        "",
        *([f"### {cmp.candidate} - {cmp.baseline}: 95% bootstrap intervals over the queries", "", *intervals, ""]
          if intervals else []),
        *([f"### {cmp.candidate} - production: 95% bootstrap intervals over the queries", "",
           *production_intervals, ""] if production_intervals else []),
        "## All metrics",
        "",
        *systems_table(metrics, [cmp.candidate, cmp.baseline]),
        "",
        "## Figures",
        "",
    ]
    lines += [f"![{title}]({name})" for title, name in figures.items()] or ["(none)"]
    if notes:
        lines += ["", "Not plotted:"] + [f"- {n}" for n in notes]
    if stage_seconds:
        lines += ["", "## Stage wall times", "", "| stage | seconds |", "|---|---:|"]
        lines += [f"| {stage} | {sec:.0f} |" for stage, sec in stage_seconds.items()]
        lines.append(f"| **total** | **{sum(stage_seconds.values()):.0f}** |")
    lines += ["", "## W&B", "", f"- mode: {wandb.get('mode')}; {wandb.get('status')}"]
    if wandb.get("run_dir"):
        lines.append(f"- run folder: `{wandb['run_dir']}` (upload: `wandb sync {wandb['run_dir']}`)")
    if wandb.get("report_url"):
        lines.append(f"- report: {wandb['report_url']}")
    return "\n".join(lines) + "\n"
