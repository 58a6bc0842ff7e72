"""Report stage: local regression report (report.md + PNGs) and a W&B run (offline by default).

Compares the candidate with the production bundle the gate judged it against (its scores on this
run's data when the gate re-scored it; else the current production) and with the baseline, with
paired bootstrap intervals against both where per-query scores exist, plots training curves from
the training stages' train.tsv, and logs everything to W&B. Absent inputs are named in the report,
never silently dropped.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniret.config.gate import GateConfig
from uniret.config.paths import resolve_path
from uniret.config.report import ReportConfig
from uniret.core.errors import DataError
from uniret.core.jsonio import read_json, read_optional_json
from uniret.core.stage_files import PROMOTION_JSON
from uniret.evaluation import plots
from uniret.evaluation.compare_systems import compare_evaluated, datasets_of, macro_groups, render_comparison
from uniret.evaluation.regression import Comparison, compare, render
from uniret.evaluation.train_logs import LOSS, SPARSITY_COLUMNS, STEP, Columns, find_train_logs
from uniret.registry.bundles import EVALUATION_DIR, read_manifest
from uniret.registry.configured import registry_root
from uniret.registry.control import read_control
from uniret.registry.errors import RegistryError
from uniret.registry.gate import resolve_gate_config
from uniret.registry.integrity import verify_published
from uniret.registry.pointer import BUNDLES, read_pointer
from uniret.runtime import StageContext, stage_output, stage_seconds
from uniret.stages import STAGES
from uniret.stages.gate import (
    DECISION_JSON,
    INDEX_BUNDLE,
    METRICS_JSON,
    PRODUCTION_DIR,
    PRODUCTION_METRICS_JSON,
)
from uniret.tracking.wandb_report import RunContent, log_run
from uniret.utils.files import atomic_write_text, hash_path

log = logging.getLogger("uniret.report")

REPORT_MD = "report.md"
NDCG_PNG = "metric_by_dataset.png"
LOSS_PNG = "training_loss.png"
SPARSITY_PNG = "sparsity.png"
INTERVAL_SEED = 0  # fixed: the report's bootstrap intervals repeat from run to run
RESCORED_NOTE = "scores re-scored on this run's data by the gate"  # where the production column comes from
STORED_NOTE = "scores stored at its promotion"


@dataclass
class ProductionView:
    """The production the gate compared against, as the report shows it."""

    version: str
    metrics: dict[str, Any]  # metrics.json-shaped
    system: str
    note: str  # where its scores came from (the report's header)
    per_query: Path | None  # a folder holding per_query/<system>/ on this run's data...
    no_per_query: str = ""  # ...or why there is none


def production_view(ctx: StageContext, root: Path, decision: dict[str, Any] | None,
                    rescored: dict[str, Any] | None) -> tuple[ProductionView | None, str]:
    """Production's scores on this run's data where known: the gate's re-scoring (`rescored`, its
    production_metrics.json, and its per-query files) when it made one for that version, else those
    stored at promotion, whose per-query files count only when the gate found them measured on this
    run's data. None (and why) when there is no production to show."""
    if decision is not None:
        version = decision.get("production")
        if version is None:
            return None, "cold start: the gate had no production bundle"
        if rescored is not None and rescored.get("version") == version:
            return ProductionView(version, rescored["metrics"], rescored["system"], RESCORED_NOTE,
                                  ctx.stage_dir("gate") / PRODUCTION_DIR), ""
    else:
        pointer = read_pointer(root)
        if pointer is None:
            return None, "no production bundle in the registry"
        version = pointer["version"]
    try:
        verify_published(root / BUNDLES / version)  # stored scores are shown only from a bundle that verifies
        manifest = read_manifest(root / BUNDLES / version)
    except RegistryError as exc:  # IntegrityError is a RegistryError
        return None, f"production bundle {version} unreadable: {exc}"
    system = (manifest.get("gate") or {}).get("candidate") or ""
    view = ProductionView(version, manifest.get("evaluation") or {}, system, STORED_NOTE, None)
    folder = root / BUNDLES / version / EVALUATION_DIR
    if decision is None:
        view.no_per_query = "no gate decision, so no word on whether production's scores are of this run's data"
    elif decision.get("production_scores_kind") != "stored":
        view.no_per_query = f"production's scores: {decision.get('production_scores') or 'unknown'}"
    elif not folder.is_dir():
        view.no_per_query = f"production {version} was published without per-query scores"
    else:
        view.per_query = folder
    return view, ""


def paused_text(ctx: StageContext, root: Path) -> str | None:
    """Why promotion is paused tonight (`uniret registry pause`, or params nightly.promote: false),
    None when it is not; a control.json that cannot be read is said, not guessed either way."""
    if not ctx.params.section("nightly").promote:
        return "params nightly.promote is false: no candidate is promoted until it is set back to true"
    try:
        control = read_control(root)
    except (RegistryError, OSError) as exc:
        return f"unknown: {exc}"
    return control.pause_text() + "; this night's candidate is not promoted" if control.paused else None


def tonight_text(ctx: StageContext, decision_path: Path) -> str | None:
    """What the promote stage did with this gate decision (its promotion.json, when it records this
    decision's sha256: an earlier night's file is never shown), with the corpus refresh; None: not run."""
    path = ctx.stage_dir("promote") / PROMOTION_JSON
    if not path.is_file() or not decision_path.is_file():
        return None
    try:
        done = read_json(path)
    except (OSError, ValueError) as exc:
        return f"unknown: {path}: {exc}"
    if done.get("decision_sha256") != hash_path(decision_path):
        return None
    text = str(done.get("summary") or done.get("status") or done.get("outcome"))
    if done.get("version") and done.get("outcome") in ("promoted", "canary"):
        text += f" ({done['version']})"
    refresh = done.get("refresh")
    return f"{text}; {refresh['summary']}" if isinstance(refresh, dict) and refresh.get("summary") else text


def training_figures(logs: dict[str, Columns], out: Path, dpi: int) -> tuple[dict[str, str], list[str]]:
    """Loss curves and sparsity curves (one panel per stage); notes for what could not be plotted."""
    figures, notes = {}, []
    loss = {s: {LOSS: (c[STEP], c[LOSS])} for s, c in logs.items() if LOSS in c}
    notes += [f"{s}: train.tsv has no {LOSS!r} column" for s, c in logs.items() if LOSS not in c]
    if loss:
        plots.line_panels(loss, out / LOSS_PNG, STEP, LOSS, dpi)
        figures["training loss"] = LOSS_PNG
    sparsity = {s: {k: (c[STEP], c[k]) for k in SPARSITY_COLUMNS if k in c} for s, c in logs.items()}
    sparsity = {s: lines for s, lines in sparsity.items() if lines}
    if sparsity:
        plots.line_panels(sparsity, out / SPARSITY_PNG, STEP, "mean active terms", dpi)
        figures["sparsity over steps"] = SPARSITY_PNG
    elif logs:
        notes.append(f"sparsity: no {' / '.join(SPARSITY_COLUMNS)} columns in any train.tsv")
    return figures, notes


def wandb_content(ctx: StageContext, cmp: Comparison, metrics: dict[str, Any], decision: dict | None,
                  images: dict[str, Path], markdown: str) -> RunContent:
    """Summary metrics, a per-dataset table, the figures and the bundle manifest."""
    summary: dict[str, Any] = {f"macro/{cmp.metric}/{role}": v for role, v in cmp.macro.items()}
    summary.update({f"{ds}/{cmp.metric}/{role}": v for ds, row in cmp.rows.items() for role, v in row.items()})
    summary["gate/passed"] = None if decision is None else bool(decision.get("passed"))
    names = sorted({m for per in (metrics.get("datasets") or {}).values() for vals in per.values() for m in vals})
    rows = [[ds, system, *[vals.get(n) for n in names]]
            for ds, per in sorted((metrics.get("datasets") or {}).items()) for system, vals in sorted(per.items())]
    manifest = ctx.stage_dir("index") / INDEX_BUNDLE / "manifest.json"
    return RunContent(
        name=f"report-{ctx.profile}-{cmp.candidate.replace('/', '-')}",
        config={"profile": ctx.profile, "candidate": cmp.candidate, "baseline": cmp.baseline,
                "production": cmp.production},
        summary=summary,
        tables={"per_dataset": (["dataset", "system", *names], rows)},
        images=images,
        manifest=manifest if manifest.is_file() else None,
        report_markdown=markdown,
    )


def intervals(evaluated: Path, a: str, b: str, metric: str, train_dataset: str, resamples: int,
              evaluated_a: Path | None = None, a_label: str | None = None) -> list[str]:
    """Markdown lines: system b (the candidate) vs a per dataset with paired bootstrap intervals over
    the test queries (per_query files: b's under `evaluated`, a's under `evaluated_a` or there too),
    or why there are none."""
    if resamples < 1:
        return ["(off: report.significance_resamples is 0)"]
    datasets = datasets_of(evaluated, b)
    if evaluated_a is not None:
        datasets = [d for d in datasets if d in set(datasets_of(evaluated_a, a))]
    if not datasets:
        return [f"(none: no per-query scores of {b} under {evaluated})"]
    try:
        results = compare_evaluated(evaluated, a, b, metric, datasets, macro_groups(datasets, train_dataset),
                                    resamples, seed=INTERVAL_SEED, evaluated_a=evaluated_a)
    except (FileNotFoundError, DataError) as exc:
        return [f"(none: {exc})"]
    return render_comparison(results, a_label or a, b, metric).splitlines()


def wandb_base(ctx: StageContext, cfg: ReportConfig) -> Path:
    """$WANDB_DIR when set (Makefile, tests), else params report.wandb_dir (repo .cache)."""
    return Path(os.environ.get("WANDB_DIR") or resolve_path(ctx.params, cfg.wandb_dir))


def run(ctx: StageContext) -> dict[str, Any]:
    """Write artifacts/report/{report.md, *.png} and the W&B run."""
    cfg: ReportConfig = ctx.params.section("report")
    gate: GateConfig = resolve_gate_config(ctx.params)
    metrics_path = ctx.require("evaluate") / METRICS_JSON
    metrics = read_json(metrics_path)
    decision, decision_absent = read_optional_json(ctx.stage_dir("gate") / DECISION_JSON, "gate decision")
    rescored, _ = read_optional_json(ctx.stage_dir("gate") / PRODUCTION_METRICS_JSON, "production re-scoring")
    root = registry_root(ctx.params)
    view, absent = production_view(ctx, root, decision, rescored)
    paused = paused_text(ctx, root)
    tonight = tonight_text(ctx, ctx.stage_dir("gate") / DECISION_JSON)
    production = None if view is None else (view.version, view.metrics, view.system)
    cmp = compare(metrics, metric=gate.metric, candidate=gate.candidate_system, baseline=gate.baseline_system,
                  production=production, macro_key=gate.macro_key)
    evaluated, train_dataset = ctx.require("evaluate"), ctx.params.section("data").train_dataset
    vs_baseline = intervals(evaluated, gate.baseline_system, gate.candidate_system, gate.metric, train_dataset,
                            cfg.significance_resamples)
    vs_production = None
    if view is not None:
        vs_production = [f"(none: {view.no_per_query})"] if view.per_query is None else intervals(
            evaluated, view.system, gate.candidate_system, gate.metric, train_dataset, cfg.significance_resamples,
            evaluated_a=view.per_query, a_label=f"production {view.version}")
    logs, notes = find_train_logs(ctx.artifacts, cfg.training_stages)
    if view is None:
        notes.append(f"production column: {absent}")
    with stage_output(ctx, "report", sections=["report", "gate"], inputs={"metrics": metrics_path}) as (out, manifest):
        labels = cmp.labels()
        values = {ds: {labels[r]: v for r, v in row.items()} for ds, row in cmp.rows.items()}
        plots.grouped_bars(values, list(labels.values()), out / NDCG_PNG,
                           f"{gate.metric} per dataset", gate.metric, cfg.figure_dpi)
        figures = {f"{gate.metric} per dataset": NDCG_PNG}
        train_figs, train_notes = training_figures(logs, out, cfg.figure_dpi)
        figures.update(train_figs)
        notes += train_notes
        images = {Path(name).stem: out / name for name in figures.values()}
        seconds = stage_seconds(ctx, STAGES[: STAGES.index("report")])  # the stages before the report
        extra = {"stage_seconds": seconds, "intervals": vs_baseline, "production_intervals": vs_production,
                 "production_note": None if view is None else view.note, "paused": paused,
                 "tonight": tonight}
        draft = render(cmp, metrics, profile=ctx.profile, decision=decision, decision_absent=decision_absent,
                       figures=figures, notes=notes, wandb={"mode": "pending", "status": "logging"}, **extra)
        outcome = log_run(wandb_content(ctx, cmp, metrics, decision, images, draft), project=cfg.wandb_project,
                          entity=cfg.wandb_entity, mode=cfg.wandb_mode, base_dir=wandb_base(ctx, cfg))
        text = render(cmp, metrics, profile=ctx.profile, decision=decision, decision_absent=decision_absent,
                      figures=figures, notes=notes, wandb=outcome.to_dict(), **extra)
        atomic_write_text(out / REPORT_MD, text)
        manifest["metrics"] = {"figures": sorted(figures.values()), "wandb": outcome.to_dict(), "notes": notes,
                               "production": cmp.production, "paused": paused,
                               "tonight": tonight}
    log.info("report written to %s (W&B %s)", ctx.stage_dir("report") / REPORT_MD, outcome.status)
    return manifest["metrics"]
