"""Run sources "trained" and "zeroshot": retrieval with torch models over every eval dataset
(their corpus passes through the models' ONNX twins where the index stage's run ONNX, E105).

- "trained": the final checkpoint of the training stages (distill, else continual, else warmup),
  in every mode of its recipe's `eval_modes` (recipes/<recipe>.yaml), systems "<recipe>/<mode>":
  dense, lexical, uni (lexical top-K then + dense score, UnifieR 3.4), hybrid / rrf (fused runs),
  exhaustive, and clear (DualRM Eq. 5: lambda_test * BM25 + embedding score over both runs).
- "zeroshot": the untrained starting models of `training.evaluation.zeroshot` (SPLADE-tiny,
  MiniLM), systems "zeroshot-<name>/<mode>"; mode clear fuses an untrained embedding model with
  BM25 with the CLEAR recipe's lambda_test (Eq. 5): the baseline of what residual training adds.
Search is in memory and exact (faiss flat, exact sparse products over quantized impacts, the
retrieval modules of uniret.retrieval). Corpus encodings are cached per (model hash, corpus)
under artifacts/<encoding.cache_dir>, so an unchanged model is never re-encoded.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from uniret.config.modes import MODEL_SEARCH_MODES
from uniret.core.runs import read_run
from uniret.evaluation.sources import Runs, SourceUnavailable, eval_datasets
from uniret.retrieval.clear import clear_runs
from uniret.runtime import StageContext, read_manifest

log = logging.getLogger("uniret.evaluation")

FINAL_STAGES = ("distill", "continual", "warmup")  # the most trained checkpoint first
BM25_RUNS = "runs"  # artifacts/bm25/runs/<dataset>.trec


def model_runs(
    ctx: StageContext,
    model,
    tokenizer,
    model_id: str,
    modes: list[str],
    prefix: str,
    bm25_weight: float | None = None,
) -> Runs:
    """{"<prefix>/<mode>": {dataset: Run}} for `model` on every eval dataset (see module doc)."""
    from uniret.export.twin import LazyTwin
    from uniret.retrieval.encoding import TorchTextEncoder

    mcfg = model.model_config
    encoder = TorchTextEncoder(model, tokenizer, ctx.params.section("encoding").batch_size, mcfg.query_max_length,
                               mcfg.doc_max_length)
    index = ctx.params.section("index")
    if index.corpus_encoder != "onnx":
        return _model_runs(ctx, encoder, model_id, modes, prefix, bm25_weight)
    with tempfile.TemporaryDirectory(dir=ctx.artifacts, prefix=".eval-onnx-") as work:
        # corpus passes run as the index stage's do (onnx on a CPU, E105); the twin's encodings are
        # the model's (export parity), so they share its cache entries
        return _model_runs(ctx, LazyTwin(encoder, Path(work), index.export), model_id, modes, prefix, bm25_weight)


def _model_runs(ctx: StageContext, encoder, model_id: str, modes: list[str], prefix: str,
                bm25_weight: float | None) -> Runs:
    """model_runs with its encoder made: torch, or a LazyTwin whose first uncached corpus makes the twin."""
    from uniret.export.twin import corpus_encoder
    from uniret.retrieval.base import encode_queries
    from uniret.retrieval.corpus_cache import cached_corpus_encoding
    from uniret.retrieval.modes import build_searchers, memory_corpus_index

    rcfg = ctx.params.section("retrieval")
    ecfg = ctx.params.section("encoding")
    data = ctx.params.section("data")
    search_modes = [m for m in modes if m in MODEL_SEARCH_MODES]
    if "clear" in modes and "dense" not in search_modes:
        search_modes.append("dense")
    runs: Runs = {}
    for name in eval_datasets(ctx):
        dataset = ctx.dataset(name)
        docs = list(dataset.iter_corpus())
        docids = [d.id for d in docs]
        queries = dataset.split_queries(data.eval_split)
        texts = [d.contents for d in docs]

        def corpus(texts=texts, queries=queries):
            return corpus_encoder(encoder, list(queries.values()), texts).encode(texts, is_query=False)

        encoded = cached_corpus_encoding(ctx.artifacts / ecfg.cache_dir, model_id, dataset.corpus_path, docids,
                                         corpus, label=f"{prefix}/{name}")
        index = memory_corpus_index(docids, encoded, rcfg)
        searchers = build_searchers(index, rcfg, encoder, modes=search_modes)
        batch = encode_queries(queries, encoder)
        depth = max(rcfg.k, ctx.params.section("training").evaluation.clear_depth) if "clear" in modes else rcfg.k
        found = {mode: s.search_batch(batch, depth if mode == "dense" else rcfg.k) for mode, s in searchers.items()}
        if "clear" in modes:
            if bm25_weight is None:
                raise ValueError(f"{prefix}: mode clear needs bm25_weight in recipes/<recipe>.yaml")
            bm25 = read_run(ctx.require("bm25") / BM25_RUNS / f"{name}.trec")
            found["clear"] = clear_runs(found["dense"], bm25, bm25_weight, rcfg.k)
        for mode in modes:
            if mode in found:
                runs.setdefault(f"{prefix}/{mode}", {})[name] = found[mode]
        log.info("%s on %s: %s", prefix, name, ", ".join(sorted(found)))
    return runs


def final_checkpoint(ctx: StageContext) -> tuple[str, Path]:
    """(stage, model dir) of the most trained checkpoint; SourceUnavailable when none exists."""
    for stage in FINAL_STAGES:
        path = ctx.stage_dir(stage) / "model"
        if path.is_dir():
            return stage, path
    raise SourceUnavailable(f"no trained model under {ctx.artifacts} (stages {', '.join(FINAL_STAGES)})")


class TrainedModelSource:
    """Every eval mode of the final trained checkpoint, systems "<recipe>/<mode>"."""

    name = "trained"
    required = False  # evaluate runs before training exists (BM25 only)
    save_runs = True

    def inputs(self, ctx: StageContext) -> dict[str, Path]:
        return {f"{s}_model": ctx.stage_dir(s) / "model" for s in FINAL_STAGES}

    def runs(self, ctx: StageContext) -> Runs:
        from uniret.models.factory import load_model
        from uniret.retrieval.corpus_cache import model_key

        stage, path = final_checkpoint(ctx)
        recipe = read_manifest(path.parent).get("recipe") or ctx.params.section("model").recipe
        plan = ctx.params.section("training").plan(recipe)
        recipe_cfg = ctx.params.section("model").recipes[recipe]
        model, tokenizer = load_model(path)
        log.info("trained source: %s model of recipe %s (%s)", stage, recipe, path)
        return model_runs(ctx, model, tokenizer, model_key(model, path), plan.eval_modes, recipe,
                          recipe_cfg.bm25_weight)


class ZeroShotSource:
    """The untrained starting models (params training.evaluation.zeroshot), "zeroshot-<name>/<mode>"."""

    name = "zeroshot"
    required = False
    save_runs = True

    def inputs(self, ctx: StageContext) -> dict[str, Path]:
        return {}

    def runs(self, ctx: StageContext) -> Runs:
        from uniret.models.factory import build_model
        from uniret.retrieval.corpus_cache import model_key

        ecfg = ctx.params.section("training").evaluation
        clear_recipe = ctx.params.section("model").recipes.get("clear")
        bm25_weight = clear_recipe.bm25_weight if clear_recipe is not None else None
        runs: Runs = {}
        for name, cfg in ecfg.zeroshot.items():
            model = build_model(cfg).eval()
            modes = ecfg.zeroshot_modes.get(name) or ["dense" if "dense" in model.channels else "lexical"]
            runs.update(model_runs(ctx, model, model.tokenizer, model_key(model), modes, f"zeroshot-{name}",
                                   bm25_weight))
        return runs
