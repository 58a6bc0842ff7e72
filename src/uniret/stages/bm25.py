"""Stage bm25: Lucene BM25 index per dataset, eval runs, and BM25 negatives for training queries.

Outputs (artifacts/bm25/):
  indexes/<dataset>/   Lucene BM25 index of each dataset in data.train_dataset + data.eval_datasets
  runs/<dataset>.trec  top bm25.top_n per query of the eval split (tag "bm25")
  train_run.trec       top bm25.top_n per query of the train dataset's train split
  negatives.jsonl      per train query: positives and bm25.negatives_per_query negatives sampled
                       from the BM25 top bm25.negatives_depth, judged positives excluded; the dev
                       queries (data.dev, uniret.data.dev_split) are left out, so no training
                       stage sees them
  dev_qrels.tsv        qrels of the dev queries (carved from the train split, never from test)
  dev_runs/<dataset>.trec  top bm25.top_n per query of data.dev.split, for each of data.dev.datasets
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from uniret.config.sections import Bm25Config, DataConfig
from uniret.core.runs import write_run
from uniret.core.stage_files import BM25_INDEXES, DEV_QRELS, DEV_RUNS, TRAIN_RUN  # noqa: F401  (read by later stages)
from uniret.data.beir import BeirDataset, write_qrels
from uniret.data.dev_split import split_qrels
from uniret.data.negatives import sample_negatives, write_negatives
from uniret.lexical.bm25 import Bm25Searcher, build_bm25_index
from uniret.lexical.jvm import ensure_jvm
from uniret.runtime import StageContext, stage_output

log = logging.getLogger("uniret.stages.bm25")

STAGE = "bm25"
RUN_TAG = "bm25"
INDEXES = BM25_INDEXES
RUNS = "runs"
NEGATIVES = "negatives.jsonl"


def datasets_in_use(data: DataConfig) -> list[str]:
    """The train dataset then the eval datasets, each once, in order."""
    return list(dict.fromkeys([data.train_dataset, *data.eval_datasets]))


def _eval_run(
    dataset: BeirDataset, searcher: Bm25Searcher, data: DataConfig, cfg: Bm25Config, path: Path
) -> dict[str, Any]:
    """The eval-split run of one dataset, written to `path`; returns its metrics."""
    queries = dataset.split_queries(data.eval_split)
    start = time.time()
    eval_run = searcher.search(queries, cfg.top_n)
    write_run(path, eval_run, RUN_TAG, cfg.top_n)
    log.info("bm25 %s: %d %s queries -> %s", dataset.name, len(queries), data.eval_split, path)
    return {
        "eval_split": data.eval_split,
        "eval_queries": len(queries),
        "eval_queries_without_hits": sum(1 for q in queries if not eval_run.get(q)),
        "eval_search_seconds": round(time.time() - start, 3),
    }


def _train_negatives(
    dataset: BeirDataset, searcher: Bm25Searcher, data: DataConfig, cfg: Bm25Config, out: Path
) -> dict[str, Any]:
    """Train-split run and negatives of the train dataset; returns their metrics."""
    qrels, dev_qrels = split_qrels(dataset.qrels(data.train_split), data.dev)
    all_queries = dataset.split_queries(data.train_split)
    queries = {q: t for q, t in all_queries.items() if q not in dev_qrels}
    start = time.time()
    run = searcher.search(all_queries, cfg.top_n)  # dev queries too: the index stage fuses with their run
    write_run(out / TRAIN_RUN, run, RUN_TAG, cfg.top_n)
    write_qrels(out / DEV_QRELS, dev_qrels)
    search_seconds = time.time() - start
    records = sample_negatives(run, qrels, queries, cfg.negatives_depth, cfg.negatives_per_query, cfg.seed)
    write_negatives(out / NEGATIVES, records)
    counts = [len(r.negatives) for r in records]
    metrics = {
        "dataset": dataset.name,
        "split": data.train_split,
        "queries": len(queries),
        "dev_queries": len(dev_qrels),
        "records": len(records),
        "queries_without_positive": len(queries) - len(records),
        "queries_short_of_negatives": sum(c < cfg.negatives_per_query for c in counts),
        "negatives": sum(counts),
        "mean_negatives_per_query": round(sum(counts) / len(counts), 3) if counts else 0.0,
        "search_seconds": round(search_seconds, 3),
    }
    log.info("train negatives: %d queries, %d negatives -> %s", len(records), sum(counts), out / NEGATIVES)
    return metrics


def run(ctx: StageContext) -> dict[str, Any]:
    """Index every dataset in use, write eval runs, train run and negatives; return the metrics."""
    cfg: Bm25Config = ctx.params.section("bm25")
    data: DataConfig = ctx.params.section("data")
    names = datasets_in_use(data)
    datasets = {name: ctx.dataset(name) for name in names}  # fails early if one was not validated
    inputs = {f"dataset/{name}": ds.root for name, ds in datasets.items()}
    with stage_output(ctx, STAGE, sections=["data", STAGE], inputs=inputs) as (out, manifest):
        start = time.time()
        ensure_jvm()  # one JVM for the whole stage: indexing and search run in-process
        metrics: dict[str, Any] = {"jvm_start_seconds": round(time.time() - start, 3), "datasets": {}}
        (out / DEV_RUNS).mkdir()  # always present (dvc.yaml lists it), empty without data.dev.datasets
        for name, dataset in datasets.items():
            stats = build_bm25_index(dataset, out / INDEXES / name, cfg)
            entry: dict[str, Any] = {
                "docs": stats.docs,
                "docs_skipped": stats.skipped,
                "index_seconds": stats.seconds,
            }
            with Bm25Searcher(stats.path, cfg) as searcher:
                if name in data.eval_datasets:
                    entry.update(_eval_run(dataset, searcher, data, cfg, out / RUNS / f"{name}.trec"))
                if name == data.train_dataset:
                    metrics["train"] = _train_negatives(dataset, searcher, data, cfg, out)
                if name in data.dev.datasets:
                    dev_queries = dataset.split_queries(data.dev.split)
                    write_run(out / DEV_RUNS / f"{name}.trec", searcher.search(dev_queries, cfg.top_n), RUN_TAG, cfg.top_n)
                    entry["dev_queries"] = len(dev_queries)
            metrics["datasets"][name] = entry
        manifest["metrics"] = metrics
    return metrics
