"""feedback stage: UBI serving logs -> validated clicks, propensities, training pairs and held-out judgments.

Reads the closed spans (UTC days) under params feedback.log_dir: a rolling window of days t-N .. t-1
for training and the newest closed day t held out for evaluation, never both. Every record is
checked with great-expectations (uniret.feedback.ingest); bad ones go to rejects.jsonl with their
reasons, and the stage fails only when a span's reject share passes feedback.reject_share_max
(the rejects are then kept in <artifacts>/feedback.rejects.jsonl, named by the error). It writes:
  spans.json             the window, each span's counts, reasons and content hash
  rejects.jsonl          every rejected record: span, file, line, reasons, the record (cut short)
  propensities.json      examination propensity per position on the training days (intervention harvesting
                         of the RandPair swaps inside each ranker's logs, E68; EM's estimate beside it)
  pairs/ips.jsonl        one positive per click of the training days (query, doc, position), IPS-weighted (clipped)
  pairs/naive.jsonl      the same positives with weight 1 (clicks as labels)
  pairs/shown.jsonl      how often each (query text, doc) was shown within depth on the training days
  train_queries.jsonl    the training days' distinct logged query texts, with their counts
  heldout/queries.jsonl  the held-out day's distinct queries (_id = uniret.feedback.derive.query_key)
  heldout/qrels/coec.tsv, heldout/qrels/click_model.tsv, heldout/qrels/ips.tsv   click-derived judgments of
                         the held-out day (ips: the IPS click rate, weighted by the training days' propensities)
With no logs (feedback.log_dir null, or no closed span) it writes only its manifest, saying so.

The manifest also names the production version the continual stage will warm-start from when its
`start_model` is `production` (`production_start`): the registry lives outside the project like the
logs, so through this always-run stage a promotion or a rollback reruns continual under `dvc repro`.
When nothing else moved, that rewrites the manifest alone: the derived files never read a model.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from uniret.core.errors import StageFailed
from uniret.data.beir import iter_corpus
from uniret.data.validation import GxSession
from uniret.feedback import derive
from uniret.feedback.examples import PAIR_FILES, SHOWN_FILE, TRAIN_QUERIES
from uniret.feedback.ingest import SpanIngest, ingest_span
from uniret.feedback.spans import Window, choose_window, closed
from uniret.registry.checkpoints import PRODUCTION
from uniret.registry.configured import registry_root
from uniret.registry.errors import RegistryError
from uniret.registry.pointer import read_pointer
from uniret.runtime import MANIFEST, StageContext, read_manifest, stage_output
from uniret.stages.recipe_stage import active_recipe
from uniret.ubi import EVENTS, QUERIES, forget_client, iter_records, list_days
from uniret.utils.files import atomic_open, atomic_write_json, hash_path

log = logging.getLogger("uniret.stages")

STAGE = "feedback"
SECTIONS = ["feedback"]
SPANS_JSON = "spans.json"
REJECTS = "rejects.jsonl"
FAILED_REJECTS = "feedback.rejects.jsonl"  # beside artifacts/feedback: a failed run writes no stage output
PROPENSITIES = "propensities.json"
IPS_PAIRS = PAIR_FILES["ips"]
NAIVE_PAIRS = PAIR_FILES["naive"]
HELDOUT_QUERIES = "heldout/queries.jsonl"
COEC_QRELS = "heldout/qrels/coec.tsv"
CLICK_MODEL_QRELS = "heldout/qrels/click_model.tsv"
IPS_QRELS = "heldout/qrels/ips.tsv"
QRELS_HEADER = "query-id\tcorpus-id\tscore\n"
# what a run on logs writes: an output of an older version that lacks one is derived again, not kept
WRITTEN = (SPANS_JSON, REJECTS, PROPENSITIES, IPS_PAIRS, NAIVE_PAIRS, SHOWN_FILE, TRAIN_QUERIES, HELDOUT_QUERIES,
           COEC_QRELS, CLICK_MODEL_QRELS, IPS_QRELS)
WARM_STAGE = "continual"  # the training stage dvc.yaml gives artifacts/feedback (and so production's version)


def feedback_output(ctx: StageContext) -> Path | None:
    """artifacts/feedback when the feedback stage ran on logs (None: it skipped, or never ran)."""
    path = ctx.stage_dir(STAGE)
    if not (path / MANIFEST).is_file():
        return None
    status = (read_manifest(path).get("metrics") or {}).get("status", "")
    return path if status == "ok" else None


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """One JSON object per line, written atomically."""
    with atomic_open(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_qrels(path: Path, scores: dict[tuple[str, str], float]) -> None:
    """A BEIR-style qrels TSV with real-valued scores (click judgments are not integer grades)."""
    with atomic_open(path) as fh:
        fh.write(QRELS_HEADER)
        for (query, doc), score in sorted(scores.items()):
            fh.write(f"{query}\t{doc}\t{score:.6f}\n")


def production_start(ctx: StageContext) -> dict[str, Any] | None:
    """The registry's production version when the continual stage warm-starts from it (`start_model:
    production`), else None. Only the version: a published version's checkpoint never changes (the
    continual stage verifies it), and a pointer that cannot be read is recorded as such."""
    recipe = active_recipe(ctx)
    if not recipe.runs(WARM_STAGE) or recipe.stage_config(WARM_STAGE).start_model != PRODUCTION:
        return None
    try:
        pointer = read_pointer(registry_root(ctx.params))
    except RegistryError as exc:
        return {"stage": WARM_STAGE, "version": None, "unreadable": str(exc)}
    return {"stage": WARM_STAGE, "version": pointer["version"] if pointer else None}


def _reuse(ctx: StageContext, status: str, inputs: dict[str, Path], start: dict[str, Any] | None) -> dict[str, Any] | None:
    """The last run's metrics when artifacts/feedback already holds this very result (same status,
    settings and span hashes), else None. When only the production start moved (a promotion or a
    rollback), only the manifest is rewritten with it: nothing the stage derives reads a model.

    The stage always runs (its spans live outside the project), so it leaves an identical output
    untouched: a rewrite would change its manifest's timings and rerun every stage reading it.
    """
    path = ctx.stage_dir(STAGE)
    if not (path / MANIFEST).is_file():
        return None
    old = read_manifest(path)
    if not ((old.get("metrics") or {}).get("status") == status
            and old.get("params") == {s: ctx.params.resolved(s) for s in SECTIONS}
            and old.get("inputs") == {k: hash_path(v) for k, v in inputs.items() if Path(v).exists()}):
        return None
    if status == "ok" and (missing := [f for f in WRITTEN if not (path / f).is_file()]):
        log.info("feedback: the last run's output lacks %s (an older version's): derived again", missing)
        return None
    if old.get("production_start") != start:
        old["production_start"] = start
        atomic_write_json(path / MANIFEST, old)
        log.info("feedback: production start now %s; the rest of the output is the last run's", start)
    return old["metrics"]


def _skip(ctx: StageContext, reason: str) -> dict[str, Any]:
    status = f"skipped: {reason}"
    start = production_start(ctx)
    if (kept := _reuse(ctx, status, {}, start)) is not None:
        log.info("feedback skipped (output kept): %s", reason)
        return kept
    with stage_output(ctx, STAGE, sections=SECTIONS) as (_, manifest):
        manifest["metrics"] = {"status": status}
        manifest["production_start"] = start
    log.info("feedback skipped: %s", reason)
    return manifest["metrics"]


def _corpus_ids(ctx: StageContext) -> set[str]:
    """Doc ids of the train dataset's validated corpus: the docs serving can show."""
    dataset = ctx.dataset(ctx.params.section("data").train_dataset)
    return {doc.id for doc in iter_corpus(dataset.corpus_path)}


def _ingest(log_dir: Path, window: Window, corpus: set[str]) -> dict[str, SpanIngest]:
    session = GxSession()
    shown: dict[str, list[str]] = {}
    out = {}
    for day in window.days:  # oldest first: an event just after midnight finds its query of the day before
        queries = list(iter_records(log_dir, QUERIES, day))
        events = list(iter_records(log_dir, EVENTS, day))
        out[day] = ingest_span(session, day, queries, events, corpus, shown)
    return out


def _rejects(spans: dict[str, SpanIngest]) -> list[dict[str, Any]]:
    return [{"span": day, **rej.to_json()} for day, span in spans.items() for rej in span.rejects]


def _check_share(ctx: StageContext, spans: dict[str, SpanIngest], limit: float) -> None:
    """StageFailed naming the spans above feedback.reject_share_max and the file holding their rejects."""
    over = {day: s for day, s in spans.items() if s.reject_share > limit}
    if not over:
        return
    path = ctx.artifacts / FAILED_REJECTS
    write_jsonl(path, _rejects(spans))
    lines = [f"- span {day}: {len(s.rejects)} of {s.records} records rejected ({s.reject_share:.1%}); "
             f"reasons: {s.reasons()}" for day, s in over.items()]
    raise StageFailed(f"feedback: rejected share above feedback.reject_share_max = {limit} in {len(over)} span(s); "
                      f"every rejected record with its reasons: {path}\n" + "\n".join(lines))


def run(ctx: StageContext) -> dict[str, Any]:
    """Validate the window's UBI records, estimate propensities, write pairs and held-out judgments."""
    cfg = ctx.params.section("feedback")
    if cfg.log_dir is None:
        return _skip(ctx, "no logs (feedback.log_dir is null)")
    log_dir = Path(cfg.log_dir)
    days = closed(list_days(log_dir), datetime.now(UTC).date())
    if not days:
        return _skip(ctx, f"no logs (no closed span under {log_dir})")
    return derive_window(ctx, choose_window(days, cfg.window_days))


def derive_window(ctx: StageContext, window: Window) -> dict[str, Any]:
    """Validate and derive everything from the spans of `window` (the stage's work once the window is chosen)."""
    cfg = ctx.params.section("feedback")
    log_dir = Path(cfg.log_dir)
    inputs = {f"{kind}/{day}": log_dir / kind / day for day in window.days for kind in (QUERIES, EVENTS)}
    inputs["corpus"] = ctx.dataset(ctx.params.section("data").train_dataset).corpus_path
    start = production_start(ctx)
    if (kept := _reuse(ctx, "ok", inputs, start)) is not None:
        log.info("feedback: the spans of %s and the settings are those of the last run: output kept",
                 window.to_json())
        return kept
    spans = _ingest(log_dir, window, _corpus_ids(ctx))
    _check_share(ctx, spans, cfg.reject_share_max)

    train = derive.sessions([q for d in window.train for q in spans[d].queries],
                            [e for d in window.train for e in spans[d].events], f"training spans {list(window.train)}")
    heldout = (derive.sessions(spans[window.heldout].queries, spans[window.heldout].events,
                               f"held-out span {window.heldout}") if window.heldout else derive.Sessions([]))
    got = derive.derive(train, heldout, cfg.depth, cfg.em_iterations, cfg.clip, cfg.coec_min_impressions,
                        cfg.harvest_within, cfg.propensity_bootstrap)
    coec = got.heldout_coec.ratings if got.heldout_coec else {}
    table = got.table()

    metrics: dict[str, Any] = {
        "status": "ok", "window": window.to_json(),
        "spans": {day: s.summary() for day, s in spans.items()},
        "rejected": sum(len(s.rejects) for s in spans.values()),
        "reject_reasons": dict(sum((Counter(s.reasons()) for s in spans.values()), Counter()).most_common()),
        "train_sessions": len(train), "heldout_sessions": len(heldout), "rankers": train.rankers(),
        "ips_pairs": len(got.ips.pairs), "naive_pairs": len(got.naive.pairs),
        "ips_left_out": got.ips.left_out,
        "heldout_queries": len({s.query_key for s in heldout}),
        "coec_judgments": len(coec), "click_model_judgments": len(got.heldout_relevance),
        "ips_judgments": got.heldout_ips.summary() if got.heldout_ips else None,
        "propensities": table,
        "propensity_half_width_max": got.half_width_max(),
        "propensities_status": got.propensity_note if window.train else "not estimated: no training span",
    }
    with stage_output(ctx, STAGE, sections=SECTIONS, inputs=inputs) as (out, manifest):
        hashes = manifest["inputs"]  # sha256 of each span folder read, by "<kind>/<day>"
        atomic_write_json(out / SPANS_JSON, {
            "log_dir": str(log_dir), **window.to_json(),
            "spans": {day: {**s.summary(), "hashes": {k: hashes[f"{k}/{day}"] for k in (QUERIES, EVENTS)
                                                        if f"{k}/{day}" in hashes}}
                      for day, s in spans.items()}})
        write_jsonl(out / REJECTS, _rejects(spans))
        atomic_write_json(out / PROPENSITIES, {
            "method": got.propensities.method if got.propensities else None, "note": got.propensity_note,
            "depth": cfg.depth, "days": list(window.train), "sessions": len(train), "table": table,
            "estimate": got.propensities.to_json() if got.propensities else None})
        write_jsonl(out / IPS_PAIRS, [p.to_json() for p in got.ips.pairs])
        write_jsonl(out / NAIVE_PAIRS, [p.to_json() for p in got.naive.pairs])
        shown = Counter((imp.query, doc) for imp in train for doc in imp.doc_ids[:cfg.depth])
        write_jsonl(out / SHOWN_FILE, [{"query": q, "doc_id": d, "shown": n} for (q, d), n in sorted(shown.items())])
        logged = Counter(imp.query for imp in train)
        write_jsonl(out / TRAIN_QUERIES, [{"text": t, "count": n} for t, n in logged.most_common()])
        texts = {s.query_key: s.query for s in heldout}
        write_jsonl(out / HELDOUT_QUERIES, [{"_id": k, "text": t} for k, t in sorted(texts.items())])
        write_qrels(out / COEC_QRELS, coec)
        write_qrels(out / CLICK_MODEL_QRELS, got.heldout_relevance)
        write_qrels(out / IPS_QRELS, got.heldout_ips.ratings if got.heldout_ips else {})
        manifest["metrics"] = metrics
        manifest["production_start"] = start
    (ctx.artifacts / FAILED_REJECTS).unlink(missing_ok=True)  # a failed run's rejects: superseded by rejects.jsonl
    log.info("feedback: window %s; %d rejected; %d IPS pairs, %d held-out judgments (COEC)",
             window.to_json(), metrics["rejected"], len(got.ips.pairs), len(coec))
    return metrics


def recorded_window(ctx: StageContext) -> Window | None:
    """The window the last successful run read (None when it skipped or never ran)."""
    path = ctx.stage_dir(STAGE) / SPANS_JSON
    if not path.is_file():
        return None
    spans = json.loads(path.read_text(encoding="utf-8"))
    return Window(train=tuple(spans["train"]), heldout=spans["heldout"])


def forget(ctx: StageContext, client_id: str) -> dict[str, Any]:
    """Remove `client_id`'s records from the raw spans, then from everything this stage derived from them.

    The derived outputs are aggregates (propensities, COEC), so they are rebuilt from the cleaned spans
    over the window the last run read, not edited; the rejects of a failed run are filtered.
    """
    cfg = ctx.params.section("feedback")
    if cfg.log_dir is None:
        raise StageFailed("feedback forget: feedback.log_dir is null: there are no logs to remove a client from")
    removed = forget_client(Path(cfg.log_dir), client_id).records_removed
    result: dict[str, Any] = {"client_id": client_id, "raw_records_removed": removed, "derived": "none"}
    failed = ctx.artifacts / FAILED_REJECTS
    if failed.is_file():
        keep = [line for line in failed.read_text(encoding="utf-8").splitlines() if client_id not in line]
        with atomic_open(failed) as fh:
            fh.writelines(line + "\n" for line in keep)
    window = recorded_window(ctx)
    if window is not None:
        derive_window(ctx, window)
        result["derived"] = f"rebuilt {ctx.stage_dir(STAGE)} from the cleaned spans of {window.to_json()}"
    log.info("feedback forget %s: %d raw record(s) removed; derived: %s", client_id, removed, result["derived"])
    return result
