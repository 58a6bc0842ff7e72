"""The promotion gate: pure decisions on plain dicts (evaluate metrics, bundle metrics, bench),
its config (resolve_gate_config) and the production bundle it compares against (production_ref).

A decision is a list of checks, each `pass`, `fail` or `skipped` (with the reason it could not be
checked: cold start, file absent, no budget configured). The gate passes when no check fails;
skipped checks are listed in the decision, never counted as passes.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from uniret.config.gate import GateConfig
from uniret.evaluation.macros import ZERO_SHOT_MACRO, zero_shot_datasets
from uniret.evaluation.noninferiority import noninferiority, threshold_worse
from uniret.registry.bundles import read_manifest
from uniret.registry.checks import Check
from uniret.registry.pointer import read_pointer
from uniret.registry.traffic_check import TrafficScores, newest_traffic_check

log = logging.getLogger("uniret.gate")

QueryScores = dict[str, dict[str, float]]  # dataset -> query -> the gate metric

# Float round-off allowance so that a value exactly at its threshold (e.g. prod - tolerance)
# is not failed by the last bit of a subtraction.
EPS = 1e-9
# Where production's scores came from (the decision's production_scores_kind; with "stored" the report
# trusts the per-query scores published with the bundle), and how each reads in a check's reason.
ScoresKind = Literal["stored", "stored_other_data", "rescored", "unavailable"]
SCORES_TEXT: dict[str, str] = {
    "stored": "stored at promotion",
    "stored_other_data": "stored at promotion, measured on other data",
    "rescored": "re-scored on this run's data",
    "unavailable": "not comparable",
}
# Keys a benchmark entry may use for p95 latency in milliseconds (the bench writer is separate).
_P95_KEYS = ("p95_ms", "latency_p95_ms", "p95")


@dataclass
class ProductionRef:
    """What the gate knows of the live bundle: its version, the metrics it is judged by (stored at its
    promotion, or re-scored on this run's data) and where those came from."""

    version: str
    metrics: dict[str, Any]  # evaluate metrics.json stored with the bundle, or its re-scoring
    system: str  # the system of those metrics that was promoted (e.g. "uni")
    bundle: Path | None = None  # the published bundle folder
    basis: dict[str, Any] | None = None  # what the stored metrics were measured on (registry.basis)
    kind: ScoresKind = "stored"  # where `metrics` came from: shown in every regression check's reason...
    why: str | None = None  # ...and, in the decision, why (what differs; "unavailable": why it failed)
    queries: QueryScores | None = None  # its per-query scores on this run's data (the paired rule)
    no_queries: str = "production's per-query scores are missing"  # why `queries` is None


@dataclass
class GateInputs:
    """Everything the gate reads. `None` means absent; `absent` says why (shown as the skip reason)."""

    metrics: dict[str, Any]
    production: ProductionRef | None = None
    index_metrics: dict[str, Any] | None = None
    bench: dict[str, Any] | None = None
    absent: dict[str, str] = field(default_factory=dict)  # "index" / "bench" -> reason
    candidate_queries: QueryScores | None = None  # the candidate's per-query scores (the paired rule)
    train_dataset: str | None = None  # left out of the zero-shot pool
    newest_traffic: TrafficScores | None = None  # evaluate's scores on the held-out day (None: it wrote none)


@dataclass
class Decision:
    """The gate's verdict with every check that led to it."""

    candidate: str
    production: str | None
    checks: list[Check]
    production_scores: str | None = None  # where production's scores came from, in words...
    production_scores_kind: str | None = None  # ...and as a ScoresKind
    # how the per-dataset settings met this run's datasets (defaults taken, names ignored): settings_notes
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    def reasons(self) -> list[str]:
        """One line per failed check (what promote prints when it skips)."""
        return [f"{c.name}: {c.reason}" for c in self.failures]

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "candidate": self.candidate,
            "production": self.production,
            "production_scores": self.production_scores,
            "production_scores_kind": self.production_scores_kind,
            "checks": [c.to_dict() for c in self.checks],
            "notes": list(self.notes),
        }


def resolve_gate_config(params) -> GateConfig:
    """The `gate` section with `candidate_system` filled in: null means the bundle mode the active
    recipe serves (training.recipes.<model.recipe>.serve_mode: uni for UnifieR, clear for CLEAR...)."""
    cfg: GateConfig = params.section("gate")
    if cfg.candidate_system:
        return cfg
    recipe = params.section("model").recipe
    return dataclasses.replace(cfg, candidate_system=params.section("training").plan(recipe).serve_mode)


# the gate's settings keyed by dataset name, with the default a dataset without an entry gets
PER_DATASET = (("min_score_per_dataset", "min_score"), ("regression_margins", "regression_margin"))


def settings_notes(cfg: GateConfig, datasets: Sequence[str]) -> tuple[list[str], list[str]]:
    """(notes, warnings) on the per-dataset settings against this run's evaluated `datasets`.

    params.yaml keys floors and margins by the BEIR collections' names. A dataset without an entry
    takes the default (a note); names that match no evaluated dataset are ignored (a warning: on your
    own data these are usually BEIR names left in place). Nothing here fails the gate.
    """
    notes, warnings = [], []
    evaluated = sorted(datasets)
    for mapping, default in PER_DATASET:
        named = getattr(cfg, mapping)
        if not named:
            continue
        defaulted = [d for d in evaluated if d not in named]
        if defaulted:
            notes.append(f"gate.{mapping} has no entry for {', '.join(defaulted)}: gate.{default} "
                         f"({getattr(cfg, default):g}) applies")
        ignored = sorted(set(named) - set(evaluated))
        if ignored:
            warnings.append(f"gate.{mapping} names {', '.join(ignored)}, not among the evaluated datasets "
                            f"({', '.join(evaluated) or 'none'}): ignored")
    return notes, warnings


def _check(name: str, dataset: str | None, value: float, threshold: float, ok: bool, reason: str) -> Check:
    return Check(name, dataset, float(value), float(threshold), "pass" if ok else "fail", reason)


def _skip(name: str, dataset: str | None, reason: str, threshold: float | None = None) -> Check:
    return Check(name, dataset, None, threshold, "skipped", reason)


def _metric(table: dict[str, Any], system: str, metric: str) -> float | None:
    value = (table.get(system) or {}).get(metric)
    return None if value is None else float(value)


def _fmt(x: float) -> str:
    return f"{x:.4f}"


def quality_checks(cfg: GateConfig, metrics: dict[str, Any]) -> list[Check]:
    """Absolute floor per dataset and candidate vs baseline on the macro average."""
    checks: list[Check] = []
    cand, m = cfg.candidate_system, cfg.metric
    datasets = metrics.get("datasets") or {}
    if not datasets:
        checks.append(Check("metrics_present", None, None, None, "fail", "metrics has no datasets"))
    for ds, systems in sorted(datasets.items()):
        value = _metric(systems, cand, m)
        floor = cfg.min_score_per_dataset.get(ds, cfg.min_score)
        if value is None:
            have = ", ".join(sorted(systems)) or "none"
            checks.append(Check("min_score", ds, None, floor, "fail",
                                f"{ds}: no {m} for candidate {cand!r} (systems: {have})"))
            continue
        ok = value + EPS >= floor
        rel = ">=" if ok else "<"
        checks.append(_check("min_score", ds, value, floor, ok, f"{ds}: {m} {_fmt(value)} {rel} minimum {_fmt(floor)}"))
    macro = metrics.get(cfg.macro_key) or {}
    cand_macro, base_macro = _metric(macro, cand, m), _metric(macro, cfg.baseline_system, m)
    if cand_macro is None or base_macro is None:
        missing = [s for s, v in ((cand, cand_macro), (cfg.baseline_system, base_macro)) if v is None]
        checks.append(Check("beats_baseline", None, cand_macro, None, "fail",
                            f"{cfg.macro_key} {m} missing for {', '.join(missing)}"))
    else:
        threshold = base_macro + cfg.bm25_margin
        ok = cand_macro + EPS >= threshold
        rel = ">=" if ok else "<"
        checks.append(_check("beats_baseline", None, cand_macro, threshold, ok,
                             f"{cfg.macro_key} {m} {_fmt(cand_macro)} {rel} {cfg.baseline_system} "
                             f"{_fmt(base_macro)} + margin {cfg.bm25_margin:g}"))
    return checks


def _paired_sets(datasets: list[str], cand: QueryScores, prod: QueryScores) -> tuple[dict, str | None]:
    """{dataset: (production's values, the candidate's)} on the same queries, or why they cannot pair."""
    sets = {}
    for ds in datasets:
        a, b = prod.get(ds), cand.get(ds)
        if a is None or b is None:
            return {}, f"{ds}: per-query scores missing for {'production' if a is None else 'the candidate'}"
        if set(a) != set(b):
            return {}, f"{ds}: candidate and production were scored on different queries"
        qids = sorted(a)
        sets[ds] = ([a[q] for q in qids], [b[q] for q in qids])
    return sets, None


def _paired_check(cfg: GateConfig, name: str, dataset: str | None, sets: dict, margin: float, what: str,
                  production: ProductionRef) -> Check:
    test = noninferiority(sets, margin, cfg.regression_confidence, cfg.regression_resamples)
    verdict = "worse beyond" if test.worse else "not worse beyond"
    reason = (f"{what}: candidate - production {production.version} {test.interval_text()} "
              f"({2 * cfg.regression_confidence - 1:.0%} interval, {test.queries} queries): {verdict} margin "
              f"{margin:g} with {cfg.regression_confidence:.0%} confidence (production's scores "
              f"{SCORES_TEXT[production.kind]})")
    return Check(name, dataset, test.diff, -margin, "fail" if test.worse else "pass", reason,
                 (test.low, test.high), "pooled" if dataset is None else "paired")


def _threshold_check(cfg: GateConfig, ds: str, value: float, prod: float, production: ProductionRef,
                     why: str | None) -> Check:
    threshold = prod - cfg.max_regression
    worse = threshold_worse(value - prod, cfg.max_regression)
    verb = "regressed beyond" if worse else "within"
    fallback = f"; point rule: {why}" if why else ""
    return Check("no_regression", ds, value, threshold, "fail" if worse else "pass",
                 f"{ds}: {cfg.metric} {_fmt(value)} vs production {production.version} {_fmt(prod)}: "
                 f"{verb} tolerance {cfg.max_regression:g} (threshold {_fmt(threshold)}; "
                 f"production's scores {SCORES_TEXT[production.kind]}){fallback}", rule="threshold")


def regression_checks(cfg: GateConfig, metrics: dict[str, Any], production: ProductionRef | None,
                      candidate_queries: QueryScores | None = None, train_dataset: str | None = None) -> list[Check]:
    """Candidate vs production on every dataset both have, and pooled over `regression_pool`.

    The paired rule (gate.regression_rule) compares per-query scores on the same queries and fails
    a dataset, or the pool, only when the candidate is worse with confidence by more than its margin;
    without per-query scores on either side each dataset falls back to the threshold rule (a point
    drop of more than max_regression). Production without comparable metrics fails the check."""
    if production is None:
        return [_skip("no_regression", None, "cold start: no production bundle")]
    if production.kind == "unavailable":
        return [Check("no_regression", None, None, None, "fail", production.why or SCORES_TEXT["unavailable"])]
    m = cfg.metric
    prod_sets = production.metrics.get("datasets") or {}
    paired = cfg.regression_rule == "paired"
    fallback = None
    if paired and (candidate_queries is None or production.queries is None):
        fallback = "the candidate's per-query scores are missing" if candidate_queries is None else production.no_queries
    checks: list[Check] = []
    compared: dict[str, tuple] = {}  # dataset -> (production's values, the candidate's) on the same queries
    for ds, systems in sorted((metrics.get("datasets") or {}).items()):
        value = _metric(systems, cfg.candidate_system, m)
        prod = _metric(prod_sets.get(ds) or {}, production.system, m)
        if value is None:
            continue  # already failed by min_score
        if prod is None:
            checks.append(_skip("no_regression", ds,
                                f"{ds}: production {production.version} has no {m} for {production.system!r}"))
            continue
        sets, why = ({}, fallback) if not paired or fallback else _paired_sets([ds], candidate_queries, production.queries)
        if sets:
            compared.update(sets)
            checks.append(_paired_check(cfg, "no_regression", ds, sets, cfg.margin(ds), f"{ds}: {m}", production))
        else:
            checks.append(_threshold_check(cfg, ds, value, prod, production, why if paired else None))
    if paired and not fallback:  # without per-query scores the point rule decides, as it always did
        checks.append(_pooled_check(cfg, compared, production, train_dataset))
    return checks


def _pooled_check(cfg: GateConfig, compared: dict[str, tuple], production: ProductionRef,
                  train_dataset: str | None) -> Check:
    """The paired rule over the pool's datasets together (their macro): evidence too weak on each set
    alone can still add up to a loss."""
    pool = (zero_shot_datasets(list(compared), train_dataset or "") if cfg.regression_pool == ZERO_SHOT_MACRO
            else list(compared))
    label = cfg.regression_pool.replace("_", "-")
    if not pool:
        return _skip("no_regression_pooled", None, f"{label}: no dataset of the pool was compared pairwise")
    return _paired_check(cfg, "no_regression_pooled", None, {d: compared[d] for d in pool}, cfg.pooled_margin,
                         f"{label} {cfg.metric} over {', '.join(pool)}", production)


def _bounded(name: str, value: float | None, bound: float | None, upper: bool, what: str,
             source: str, absent_reason: str | None, required: bool = False) -> Check:
    """`value` <= bound (upper) or >= bound. Unknown bound: skipped. Unknown value: skipped with its
    reason, or failed when `required` (a budget that cannot be measured must not let a candidate by)."""
    if bound is None:
        return _skip(name, None, f"no budget configured for {what}")
    if value is None:
        reason = absent_reason or f"{what} not reported by {source}"
        if required:
            return Check(name, None, None, float(bound), "fail", f"cannot be measured: {reason}")
        return _skip(name, None, reason, bound)
    ok = value <= bound + EPS if upper else value + EPS >= bound
    rel = ("<=" if ok else ">") if upper else (">=" if ok else "<")
    kind = "maximum" if upper else "minimum"
    return _check(name, None, value, bound, ok, f"{what} {value:g} {rel} {kind} {bound:g} ({source})")


def sparsity_checks(cfg: GateConfig, index_metrics: dict[str, Any] | None, absent: str | None) -> list[Check]:
    """Mean active terms per document within bounds: 0 means the sparse head collapsed."""
    value = None if index_metrics is None else index_metrics.get("mean_active_terms_doc")
    value = None if value is None else float(value)
    what = "mean active terms per doc"
    return [
        _bounded("sparsity_min", value, cfg.min_active_terms_doc, False, what, "index bundle", absent),
        _bounded("sparsity_max", value, cfg.max_active_terms_doc, True, what, "index bundle", absent),
    ]


def latency_mode(cfg: GateConfig) -> str:
    """The bench mode whose latency is budgeted: configured, else the candidate's mode."""
    return cfg.latency_mode or cfg.candidate_system.rsplit("/", 1)[-1]


def bench_p95_ms(bench: dict[str, Any], mode: str) -> float | None:
    """p95 latency (ms) of `mode` from a bench.json, accepting {modes|latency: {mode: {...}}} or {mode: {...}}."""
    for table in (bench.get("modes"), bench.get("latency"), bench):
        entry = table.get(mode) if isinstance(table, dict) else None
        if isinstance(entry, dict):
            nested = entry.get("latency") if isinstance(entry.get("latency"), dict) else entry
            for key in _P95_KEYS:
                if nested.get(key) is not None:
                    return float(nested[key])
    return None


def bench_p50_ratio(bench: dict[str, Any], mode: str, reference: str = "bm25") -> float | None:
    """p50 latency of `mode` over the p50 of `reference` in the same bench run (None: either missing).
    A ratio of two figures taken side by side holds on a slow or noisy machine; an absolute time does not."""
    modes = bench.get("modes")
    if not isinstance(modes, dict):
        return None
    ours, ref = modes.get(mode), modes.get(reference)
    if not (isinstance(ours, dict) and isinstance(ref, dict)):
        return None
    if ours.get("p50_ms") is None or not ref.get("p50_ms"):
        return None
    return float(ours["p50_ms"]) / float(ref["p50_ms"])


def bench_gap(bench: dict[str, Any] | None, section: str, absent: str | None, what: str) -> str:
    """Why the bench figures cannot answer a budget: absent output, failed/skipped section, or a gap."""
    if bench is None:
        return absent or "bench stage output absent"
    entry = bench.get(section)
    if not isinstance(entry, dict):
        return f"bench section {section!r} did not run"
    if entry.get("skipped"):
        return f"bench section {section!r} {entry['skipped']}"
    return what


def _latency_gap(bench: dict[str, Any] | None, mode: str, absent: str | None) -> str:
    modes = (bench or {}).get("modes")
    entry = modes.get(mode) if isinstance(modes, dict) else None
    if isinstance(entry, dict) and entry.get("skipped"):
        return f"bench mode {mode!r}: {entry['skipped']}"
    have = ", ".join(sorted(k for k in modes if isinstance(modes.get(k), dict))) if isinstance(modes, dict) else ""
    return bench_gap(bench, "modes", absent, f"served mode {mode!r} missing from the bench figures (modes: {have or 'none'})")


def production_latency_checks(cfg: GateConfig, bench: dict[str, Any] | None, mode: str, absent: str | None,
                              production: str | None) -> list[Check]:
    """The served mode's p50 and p95 over production's (version `production`; None: a cold start, which
    skips them), from the bench stage's side-by-side timing (bench.json "vs_production"). With a
    production, a timing that is missing or failed blocks (a budget that cannot be measured must not
    let a candidate by)."""
    side = (bench or {}).get("vs_production")
    checks = []
    for stat, bound in (("p50", cfg.max_latency_p50_vs_production), ("p95", cfg.max_latency_p95_vs_production)):
        name, what = f"latency_{stat}_vs_production", f"{stat} latency of mode {mode!r} / production's (side by side)"
        if production is None and bound is not None:
            checks.append(_skip(name, None, "no production bundle (cold start): nothing to compare with", bound))
            continue
        value = side.get(f"{stat}_vs_production") if isinstance(side, dict) else None
        gap = None
        if value is None:
            gap = (absent or "bench stage output absent") if bench is None else (
                f"bench: {side['failed']}" if isinstance(side, dict) and side.get("failed")
                else "bench figures lack the side-by-side timing with production (bench.stage.production_rounds 0?)")
        checks.append(_bounded(name, None if value is None else float(value), bound, True, what, "bench", gap,
                               required=True))
    return checks


def budget_checks(cfg: GateConfig, inputs: GateInputs) -> list[Check]:
    """Latency (bench stage) and index-size (bundle metrics, else bench) budgets; a configured budget
    that neither can answer fails with the reason."""
    mode = latency_mode(cfg)
    bench_absent = inputs.absent.get("bench")
    p95 = None if inputs.bench is None else bench_p95_ms(inputs.bench, mode)
    gap = None if p95 is not None else _latency_gap(inputs.bench, mode, bench_absent)
    checks = [_bounded("latency_p95_ms", p95, cfg.max_latency_p95_ms, True, f"p95 latency (ms) of mode {mode!r}",
                       "bench", gap, required=True)]
    ratio = None if inputs.bench is None else bench_p50_ratio(inputs.bench, mode)
    ratio_gap = None if ratio is not None else (
        gap or _latency_gap(inputs.bench, "bm25", bench_absent) if inputs.bench is None or p95 is None
        else "bench figures lack the p50 of mode 'bm25' (the reference of the ratio)")
    checks.append(_bounded("latency_p50_vs_bm25", None if ratio is None else round(ratio, 3), cfg.max_latency_ratio_bm25,
                           True, f"p50 latency of mode {mode!r} / p50 of bm25 (same bench run)", "bench", ratio_gap,
                           required=True))
    checks.extend(production_latency_checks(cfg, inputs.bench, mode, bench_absent,
                                            inputs.production.version if inputs.production else None))
    for kind, bound in (("dense", cfg.max_bytes_per_doc_dense), ("sparse", cfg.max_bytes_per_doc_sparse)):
        key = f"bytes_per_doc_{kind}"
        value, source = None, "index bundle"
        for name, table in (("index bundle", inputs.index_metrics), ("bench", inputs.bench)):
            if table and table.get(key) is not None:
                value, source = float(table[key]), name
                break
        gap = None
        if value is None:
            index_gap = inputs.absent.get("index") or f"index bundle metrics have no {key}"
            gap = f"{index_gap}; {bench_gap(inputs.bench, 'sizes', bench_absent, f'bench sizes have no {key}')}"
        checks.append(_bounded(f"index_{key}", value, bound, True, key.replace("_", " "),
                               source if value is not None else "index bundle or bench", gap, required=True))
    return checks


def decide(cfg: GateConfig, inputs: GateInputs) -> Decision:
    """Apply every rule of `cfg` to `inputs`; cold start (no production) skips the regression rule."""
    checks = quality_checks(cfg, inputs.metrics)
    checks += regression_checks(cfg, inputs.metrics, inputs.production, inputs.candidate_queries,
                                inputs.train_dataset)
    if inputs.newest_traffic is not None:  # None: metrics written without the section (by hand, or before it existed)
        checks.append(newest_traffic_check(cfg, inputs.newest_traffic,
                                           inputs.production.version if inputs.production else None))
    checks += sparsity_checks(cfg, inputs.index_metrics, inputs.absent.get("index"))
    checks += budget_checks(cfg, inputs)
    notes, warnings = settings_notes(cfg, list(inputs.metrics.get("datasets") or {}))
    for warning in warnings:
        log.warning("gate: %s", warning)
    notes = [*warnings, *notes]
    prod = inputs.production
    if prod is None:
        return Decision(candidate=cfg.candidate_system, production=None, checks=checks, notes=notes)
    text = SCORES_TEXT[prod.kind]
    scores = prod.why if prod.kind == "unavailable" else (f"{text} ({prod.why})" if prod.why else text)
    return Decision(candidate=cfg.candidate_system, production=prod.version, checks=checks,
                    production_scores=scores, production_scores_kind=prod.kind, notes=notes)


def decision_markdown(decision: Decision) -> str:
    """A human-readable decision.md: verdict, failures first, then every check."""
    verdict = "PASSED" if decision.passed else "BLOCKED"
    lines = [
        f"# Gate decision: {verdict}",
        "",
        f"- candidate: `{decision.candidate}`",
        f"- production: `{decision.production or 'none (cold start)'}`",
    ]
    if decision.production_scores:
        lines.append(f"- production's scores: {decision.production_scores}")
    lines.append("")
    if decision.failures:
        lines += ["## Why blocked", ""] + [f"- {r}" for r in decision.reasons()] + [""]
    lines += ["## Checks", "", "| check | dataset | rule | value | interval | threshold | status | reason |",
              "|---|---|---|---|---|---|---|---|"]
    for c in decision.checks:
        value = "" if c.value is None else f"{c.value:.4g}"
        threshold = "" if c.threshold is None else f"{c.threshold:.4g}"
        interval = "" if c.interval is None else f"[{c.interval[0]:+.4f}, {c.interval[1]:+.4f}]"
        lines.append(f"| {c.name} | {c.dataset or ''} | {c.rule or ''} | {value} | {interval} | {threshold} "
                     f"| {c.status} | {c.reason} |")
    if decision.notes:
        lines += ["", "## Per-dataset settings", ""] + [f"- {n}" for n in decision.notes]
    return "\n".join(lines) + "\n"


def production_ref(root: Path, cfg: GateConfig) -> ProductionRef | None:
    """The live bundle's version and stored evaluation metrics; None on cold start."""
    pointer = read_pointer(root)
    if pointer is None:
        return None
    bundle = root / pointer["bundle"]
    manifest = read_manifest(bundle)
    system = (manifest.get("gate") or {}).get("candidate") or cfg.candidate_system
    basis = (manifest.get("lineage") or {}).get("evaluation_basis")
    return ProductionRef(pointer["version"], manifest.get("evaluation") or {}, system, bundle, basis)
