"""validate stage: check every dataset in use, then publish validated snapshots for the DAG.

Reads the full source files of data.train_dataset + data.eval_datasets from the data root, runs
the structural pass and the great-expectations suites, and compares each dataset with the
snapshot the previous successful run validated (drift). Any problem fails the stage with one
message listing all of them, and nothing is written: a previous good artifacts/validate stays.
On success it writes, atomically:
  datasets/<name>/    the snapshot later stages read via ctx.dataset(name) (sliced per data.slice)
  validation.json     every expectation and drift result
  data_docs/          great-expectations Data Docs (HTML)
  stats/<name>.json   row counts and length sketches, the baseline of the next drift check
"""

from __future__ import annotations

import logging
import time
from typing import Any

from tqdm import tqdm

from uniret.config.sections import DataConfig
from uniret.core.errors import StageFailed
from uniret.data.beir import BeirDataset
from uniret.data.drift import compare_stats, dataset_stats, load_stats, save_stats
from uniret.data.slicing import write_slice
from uniret.data.tables import load_tables
from uniret.data.validation import DatasetReport, GxSession, validate_dataset
from uniret.runtime import VALIDATED_DATA, StageContext, stage_output
from uniret.utils.files import atomic_write_json

log = logging.getLogger("uniret.stages")

STAGE = "validate"
SECTIONS = ["data", "validate"]
DOCS_DIR = "data_docs"
REPORT_FILE = "validation.json"


def dataset_names(data_cfg: DataConfig) -> list[str]:
    """The train dataset, then the eval datasets, without duplicates."""
    return list(dict.fromkeys([data_cfg.train_dataset, *data_cfg.eval_datasets]))


def required_splits(name: str, data_cfg: DataConfig) -> dict[str, str]:
    """The qrels splits the DAG will read from dataset `name`, with the params key asking for each."""
    needed: dict[str, str] = {}
    if name == data_cfg.train_dataset:
        needed[data_cfg.train_split] = "data.train_split"
    if name in data_cfg.eval_datasets:
        needed.setdefault(data_cfg.eval_split, "data.eval_split")
    if name in data_cfg.dev.datasets:
        needed.setdefault(data_cfg.dev.split, "data.dev.split")
    return needed


def _summary(reports: list[DatasetReport], baselines: dict[str, bool]) -> dict[str, Any]:
    checks = [c for r in reports for c in r.checks]
    drift = [d for r in reports for d in r.drift]
    return {
        "datasets": [r.name for r in reports],
        "rows": {r.name: r.rows for r in reports},
        "checks": len(checks),
        "checks_passed": sum(c.success for c in checks),
        "drift_checks": len(drift),
        "drift_flagged": sum(not d.ok for d in drift),
        "drift_baseline": baselines,
    }


def _table(reports: list[DatasetReport], baselines: dict[str, bool]) -> str:
    """A short fixed-width summary table for the log."""
    header = f"{'dataset':<14}{'docs':>9}{'queries':>9}{'qrels':>9}  {'checks':>7}  drift"
    lines = [header]
    for r in reports:
        qrels = sum(n for rel, n in r.rows.items() if rel.startswith("qrels/"))
        passed = sum(c.success for c in r.checks)
        flagged = sum(not d.ok for d in r.drift)
        drift = f"{len(r.drift) - flagged}/{len(r.drift)} ok" if baselines.get(r.name) else "no baseline"
        lines.append(
            f"{r.name:<14}{r.rows.get('corpus.jsonl', 0):>9}{r.rows.get('queries.jsonl', 0):>9}{qrels:>9}"
            f"  {f'{passed}/{len(r.checks)}':>7}  {drift}"
        )
    return "\n".join(lines)


def _failure(reports: list[DatasetReport], fail_on_drift: bool, ctx: StageContext) -> StageFailed:
    problems = [p for r in reports for p in r.problems(include_drift=fail_on_drift)]
    bad = sum(bool(r.problems(include_drift=fail_on_drift)) for r in reports)
    text = (
        f"validation failed: {len(problems)} problem(s) in {bad} of {len(reports)} dataset(s); "
        f"nothing written ({ctx.stage_dir(STAGE)} left as it was)\n" + "\n".join(f"- {p}" for p in problems)
    )
    if any(not d.ok for r in reports for d in r.drift) and fail_on_drift:
        text += "\n(if the data change is intended, run once with validate.fail_on_drift: false)"
    return StageFailed(text)


def run(ctx: StageContext) -> dict[str, Any]:
    """Validate every dataset in use; write snapshots, report, Data Docs and drift stats."""
    data_cfg = ctx.params.section("data")
    cfg = ctx.params.section("validate")
    names = dataset_names(data_cfg)
    start = time.perf_counter()
    previous_dir = ctx.stage_dir(STAGE)  # read baselines now: stage_output replaces this dir
    session = GxSession()
    reports: list[DatasetReport] = []
    stats: dict[str, dict[str, Any]] = {}
    baselines: dict[str, bool] = {}
    for name in tqdm(names, desc="validate", unit="dataset", disable=None):
        tables = load_tables(ctx.data_root, name, required_splits(name, data_cfg))
        report = validate_dataset(session, tables, cfg)
        if report.ok:  # drift is only meaningful on data that passed
            stats[name] = dataset_stats(tables, cfg.drift)
            previous = load_stats(previous_dir, name)
            baselines[name] = previous is not None
            if previous is not None:
                report.drift = compare_stats(previous, stats[name], cfg.drift)
        reports.append(report)
    for drift in (d for r in reports for d in r.drift if not d.ok):
        log.warning("%s", drift.message())

    if any(r.problems(include_drift=cfg.fail_on_drift) for r in reports):
        raise _failure(reports, cfg.fail_on_drift, ctx)

    summary = _summary(reports, baselines)
    summary["validation_seconds"] = round(time.perf_counter() - start, 3)  # reading + GX + drift
    inputs = {name: ctx.data_root / name for name in names}
    with stage_output(ctx, STAGE, sections=SECTIONS, inputs=inputs) as (out, manifest):
        for name in names:
            write_slice(BeirDataset(ctx.data_root / name, name), out / VALIDATED_DATA / name, data_cfg.slice)
            save_stats(out, stats[name])
        session.build_docs(out / DOCS_DIR)
        atomic_write_json(
            out / REPORT_FILE,
            {"success": True, "data_root": str(ctx.data_root), "datasets": [r.to_json() for r in reports]},
        )
        manifest["metrics"] = summary
    log.info("validated %d dataset(s):\n%s", len(reports), _table(reports, baselines))
    return summary
