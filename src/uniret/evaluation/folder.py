"""Evaluate any BEIR folder without the DAG: BM25, a bundle and/or a checkpoint on the user's datasets.

`evaluate_folder` checks every dataset with the validate stage's strict reader and expectations
(nothing is built when one fails), then lays out a temporary work folder the way the DAG lays out
its artifacts, so the evaluate stage's own run sources produce the runs unchanged:
  bm25/indexes/<dataset>, bm25/runs/<dataset>.trec   built here with the lexical package
  index/bundle -> the bundle                          run source "bundle" (every retrieval mode)
  warmup/model -> the checkpoint                      run source "trained" (its recipe's eval modes)
Scoring and the output files are the evaluate stage's (metrics.json, metrics.md,
per_query/<system>/<dataset>.json, runs/<system>/<dataset>.trec, here for every system, BM25
included) plus a manifest.json; they are written to a temp folder renamed onto `out`, which must
not hold anything uniret did not write (uniret.utils.owned).
"""

from __future__ import annotations

import copy
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniret.config import Params
from uniret.core.errors import StageFailed
from uniret.core.runs import write_run
from uniret.data.beir import CORPUS_FILE, BeirDataset
from uniret.evaluation.bundle_source import BM25_INDEXES, BUNDLE
from uniret.evaluation.outputs import write_evaluation
from uniret.evaluation.scoring import score_systems
from uniret.evaluation.sources import Bm25Source, RunSource, collect_runs
from uniret.evaluation.tables import metrics_table
from uniret.runtime import MANIFEST, StageContext, read_manifest, stage_output
from uniret.utils.files import atomic_write_json, make_temp_dir
from uniret.utils.owned import check_output_path

log = logging.getLogger("uniret.evaluation")

CHECKPOINT_STAGE = "warmup"  # the work folder's stage holding the checkpoint (read by the "trained" source)
SPLIT_FLAG = "--split"  # named in a missing-split problem


@dataclass
class FolderRequest:
    """What to score, on which datasets, and where the results go."""

    data_root: Path
    datasets: list[str]
    split: str
    out: Path
    bundle: Path | None = None
    checkpoint: Path | None = None
    recipe: str | None = None  # the checkpoint's recipe (default: its stage manifest, else model.recipe)


class FolderContext(StageContext):
    """A stage context over a work folder whose datasets are read straight from the user's folder."""

    def dataset(self, name: str) -> BeirDataset:
        return BeirDataset(self.data_root / name, name)


def find_datasets(root: Path) -> list[str]:
    """The BEIR dataset folders (those holding a corpus.jsonl) directly under `root`."""
    return sorted(p.name for p in Path(root).iterdir() if (p / CORPUS_FILE).is_file())


def check_datasets(params: Params, root: Path, names: list[str], split: str) -> dict[str, int]:
    """The validate stage's structural pass and expectations on each dataset; StageFailed lists every
    problem (file, line, field). Returns the qrels rows of the split per dataset."""
    from uniret.data.tables import load_tables
    from uniret.data.validation import GxSession, validate_dataset

    cfg = params.section("validate")
    session = GxSession()
    problems: list[str] = []
    counts: dict[str, int] = {}
    for name in names:
        report = validate_dataset(session, load_tables(root, name, {split: SPLIT_FLAG}), cfg)
        problems += report.problems(include_drift=False)
        counts[name] = report.rows.get(f"qrels/{split}.tsv", 0)
    if problems:
        raise StageFailed(f"{len(problems)} problem(s) in {root}; nothing written\n" + "\n".join(f"- {p}" for p in problems))
    return counts


def _set(raw: dict[str, Any], section: str, profile: str, values: dict[str, Any]) -> None:
    """Set `values` in a raw params section, dropping the active profile's overrides of those keys."""
    sec = raw.setdefault(section, {})
    sec.update(values)
    override = (sec.get("profiles") or {}).get(profile) or {}
    for key in values:
        override.pop(key, None)


def folder_params(params: Params, request: FolderRequest, train_dataset: str) -> Params:
    """`params` with the eval datasets and split of `request`, whole datasets (no slice)."""
    raw = copy.deepcopy(params.raw)
    _set(raw, "data", params.profile, {
        "eval_datasets": list(request.datasets), "eval_split": request.split, "train_dataset": train_dataset,
        "slice": {"max_queries": None, "max_docs": None, "seed": params.section("data").slice.seed},
    })
    return Params(raw=raw, profile=params.profile, path=params.path)


def _checkpoint_recipe(request: FolderRequest, params: Params) -> str:
    """--recipe, else the recipe its training stage's manifest names, else params model.recipe."""
    if request.recipe:
        return request.recipe
    stage_dir = request.checkpoint.parent
    if (stage_dir / MANIFEST).is_file() and read_manifest(stage_dir).get("recipe"):
        return read_manifest(stage_dir)["recipe"]
    return params.section("model").recipe


def _link(work: Path, stage: str, name: str, target: Path, **manifest: Any) -> None:
    """work/<stage>/<name> -> target, with the small manifest the run sources look for."""
    (work / stage).mkdir(parents=True, exist_ok=True)
    (work / stage / name).symlink_to(target.resolve(), target_is_directory=True)
    atomic_write_json(work / stage / MANIFEST, {"stage": stage, "linked_from": str(target.resolve()), **manifest})


def build_bm25(ctx: StageContext) -> None:
    """Lucene BM25 index and eval-split run of every dataset under work/bm25/ (what the bm25 stage writes)."""
    from uniret.lexical.bm25 import Bm25Searcher, build_bm25_index
    from uniret.lexical.jvm import ensure_jvm

    cfg = ctx.params.section("bm25")
    split = ctx.params.section("data").eval_split
    out = ctx.stage_dir("bm25")
    ensure_jvm()
    for name in ctx.params.section("data").eval_datasets:
        dataset = ctx.dataset(name)
        stats = build_bm25_index(dataset, out / BM25_INDEXES / name, cfg)
        with Bm25Searcher(stats.path, cfg) as searcher:
            run = searcher.search(dataset.split_queries(split), cfg.top_n)
        write_run(out / Bm25Source.RUNS_DIR / f"{name}.trec", run, "bm25", cfg.top_n)
        log.info("bm25 %s: %d docs indexed, %d queries", name, stats.docs, len(run))
    atomic_write_json(out / MANIFEST, {"stage": "bm25", "built_by": "evaluate --data"})


def _sources(request: FolderRequest, work: Path, params: Params) -> list[RunSource]:
    """BM25 always; the bundle's modes and the checkpoint's, linked into the work folder, when given."""
    from uniret.evaluation.bundle_source import BundleSource
    from uniret.evaluation.model_source import TrainedModelSource

    sources: list[RunSource] = [Bm25Source()]
    if request.bundle is not None:
        _link(work, "index", BUNDLE, request.bundle)
        sources.append(BundleSource())
    if request.checkpoint is not None:
        _link(work, CHECKPOINT_STAGE, "model", request.checkpoint, recipe=_checkpoint_recipe(request, params))
        sources.append(TrainedModelSource())
    return sources


def evaluate_folder(params: Params, request: FolderRequest) -> dict[str, Any]:
    """Score BM25 (+ the bundle, + the checkpoint) on `request.datasets`; write `request.out`; see module doc."""
    from uniret.retrieval.bundle import read_bundle_manifest

    # a folder uniret did not write, or one in the data root or a registry, is refused before any work
    out = check_output_path(request.out.resolve(), data_roots=(request.data_root,))
    for path, what in ((request.bundle, "bundle"), (request.checkpoint, "checkpoint")):
        if path is not None and not path.is_dir():
            raise FileNotFoundError(f"{path}: {what} folder not found")
    bundle_manifest = read_bundle_manifest(request.bundle) if request.bundle is not None else {}
    train_dataset = bundle_manifest.get("train_dataset") or params.section("data").train_dataset
    started = time.time()
    params = folder_params(params, request, train_dataset)
    counts = check_datasets(params, request.data_root, request.datasets, request.split)
    cfg = params.section("evaluate")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = make_temp_dir(out.parent, f".{out.name}.work-")
    try:
        ctx = FolderContext(params=params, data_root=request.data_root, artifacts=work)
        build_bm25(ctx)
        sources = _sources(request, work, params)
        runs, report = collect_runs(ctx, sources)
        qrels = {name: ctx.dataset(name).qrels(request.split) for name in request.datasets}
        scores = score_systems(qrels, runs, cfg.metrics, cfg.ignore_identical_ids, train_dataset)
        table = metrics_table(scores.doc, cfg.metrics)
        out_ctx = StageContext(params=params, data_root=request.data_root, artifacts=out.parent, started=started)
        inputs = {f"dataset/{n}": request.data_root / n for n in request.datasets}
        inputs.update({k: v for k, v in (("bundle", request.bundle), ("checkpoint", request.checkpoint)) if v})
        with stage_output(out_ctx, out.name, sections=["data", "bm25", "retrieval", "evaluate"], inputs=inputs) as (
            tmp, manifest,
        ):
            write_evaluation(tmp, scores, table, runs, request.split)
            manifest.update(
                command="uniret evaluate --data", data_root=str(request.data_root), datasets=request.datasets,
                split=request.split, qrels_rows=counts, sources=report,
                bundle=str(request.bundle) if request.bundle else None,
                checkpoint=str(request.checkpoint) if request.checkpoint else None,
                metrics={"macro": scores.doc["macro"], "zero_shot_macro": scores.doc["zero_shot_macro"]},
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("evaluation of %s (%s split) -> %s\n%s", request.data_root, request.split, out, table)
    return scores.doc
