"""Run source "bundle": every retrieval mode of the index stage's bundle, on every eval dataset.

Where each run comes from (recorded in `provenance` and in the evaluate log):
- the bundle's own corpus (data.train_dataset): the bundle's faiss index, Lucene impact index and
  BM25 index, queries encoded by the bundle's ONNX query encoder: exactly what serving runs;
- any other eval dataset: its corpus encoded by the bundle's ONNX document encoder into
  in-memory structures (faiss per retrieval.dense, exact sparse products with the same
  quantization as the Lucene impact index), queries by the ONNX query encoder; BM25 there
  uses that dataset's index from the bm25 stage.
Systems are named after their mode ("dense", "lexical", "uni", "hybrid", ...). The bundle's
"bm25" mode is not reported: the bm25 source already scores the same Lucene BM25 runs.
"""

from __future__ import annotations

import logging
from pathlib import Path

from uniret.evaluation.sources import Runs, SourceUnavailable, eval_datasets
from uniret.stages.runtime import StageContext

log = logging.getLogger("uniret.evaluation")

BUNDLE = "bundle"  # artifacts/index/bundle
BM25_INDEXES = "indexes"  # artifacts/bm25/indexes/<dataset>
SKIPPED_MODES = ("bm25",)  # scored by the bm25 source


class BundleSource:
    """Runs of every retrieval mode (params `retrieval.modes`) from artifacts/index/bundle."""

    name = "bundle"
    required = False  # the evaluate stage runs before the index stage exists (BM25 only)
    save_runs = True

    def __init__(self) -> None:
        self.provenance: dict[str, dict[str, str]] = {}  # {dataset: {mode: where from}}

    def _bundle_dir(self, ctx: StageContext) -> Path:
        try:
            return ctx.require("index") / BUNDLE
        except FileNotFoundError as exc:
            raise SourceUnavailable(str(exc)) from exc

    def inputs(self, ctx: StageContext) -> dict[str, Path]:
        return {"bundle": ctx.stage_dir("index") / BUNDLE}

    def runs(self, ctx: StageContext) -> Runs:
        from uniret.retrieval.base import encode_queries
        from uniret.retrieval.bundle import open_bundle
        from uniret.retrieval.modes import build_searchers, memory_corpus_index

        cfg = ctx.params.section("retrieval")
        data = ctx.params.section("data")
        bundle = open_bundle(self._bundle_dir(ctx), cfg)
        modes = [m for m in cfg.modes if m not in SKIPPED_MODES]
        runs: Runs = {}
        for name in eval_datasets(ctx):
            dataset = ctx.dataset(name)
            if name == bundle.manifest["train_dataset"]:
                index = bundle.index
            else:
                docs = list(dataset.iter_corpus())
                log.info("bundle source: encoding %s (%d docs) with the ONNX doc encoder", name, len(docs))
                encoded = bundle.encoder.encode([d.contents for d in docs], is_query=False)
                bm25_dir = ctx.stage_dir("bm25") / BM25_INDEXES / name
                index = memory_corpus_index([d.id for d in docs], encoded, cfg, bm25_dir if bm25_dir.is_dir() else None)
            searchers = build_searchers(index, cfg, bundle.encoder, bundle.bm25, bundle.has_gate, modes)
            batch = encode_queries(dataset.split_queries(data.eval_split), bundle.encoder)
            for mode, searcher in searchers.items():
                runs.setdefault(mode, {})[name] = searcher.search_batch(batch, cfg.k)
            self.provenance[name] = {m: index.provenance.get(m, "derived from the modes it fuses or re-scores")
                                     for m in searchers}
            log.info("bundle source %s: %s", name, self.provenance[name])
        return runs
