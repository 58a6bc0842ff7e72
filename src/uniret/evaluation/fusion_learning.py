"""The fusion weights of a bundle, learned on the dev splits by the index stage (never on a test split).

For each fusion mode the active retrieval settings offer (FUSION_MODES: hybrid, hybrid_bm25, ...)
and whose every fused run the model has, the runs are produced on each dev set (exact in-memory
search over the bundle's own encodings, the bm25 stage's BM25 runs) and the weights are searched on
a simplex grid (uniret.evaluation.fusion_tuning). The result is recorded in the bundle's manifest
(`fusion`), which serving and the evaluate stage read.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from uniret.config.modes import BM25_SIGNALS, FUSION_MODES  # FUSION_MODES: weights learned on the dev split
from uniret.config.retrieval import IndexConfig, RetrievalConfig
from uniret.core.errors import ConfigError
from uniret.core.runs import ranked
from uniret.core.stage_files import BM25_INDEXES, DEV_QRELS, DEV_RUNS, TRAIN_RUN
from uniret.data.beir import BeirDataset
from uniret.runtime import StageContext

log = logging.getLogger("uniret.stages.index")  # its lines belong to the index stage's log


def tuning_runs(queries: dict[str, str], docids: list[str], encoded, encoder, rcfg: RetrievalConfig,
                 heads: list[str], bm25_run, bm25_index: Path, bm25_cfg, static=None) -> dict[str, Any]:
    """{mode: dev run} of the fused heads (exact in-memory search over `encoded`), BM25 (the bm25
    stage's run) and, when a fusion takes it, BM25 with RM3 (searched here in `bm25_index`)."""
    from uniret.core.runs import ranked
    from uniret.retrieval.base import encode_queries
    from uniret.retrieval.bm25 import Bm25ModeSearcher
    from uniret.retrieval.feedback import FeedbackDenseSearcher, feedback_key
    from uniret.retrieval.modes import build_searchers, memory_corpus_index

    index = memory_corpus_index(docids, encoded, rcfg, static_query=static)
    searchers = build_searchers(index, rcfg, encoder, modes=[h for h in heads if h not in (*BM25_SIGNALS, "dense_feedback")])
    batch = encode_queries(queries, encoder)
    runs = {m: s.search_batch(batch, rcfg.fusion.depth_of(m)) for m, s in searchers.items()}
    runs["bm25"] = {q: dict(ranked(bm25_run.get(q, {}), rcfg.fusion.depth_of("bm25"))) for q in queries}
    if "dense_feedback" in heads:  # fed by the bm25 stage's run, as served hybrid_fast feeds it its BM25 route's
        route = build_searchers(index, rcfg, None, modes=["dense_static"])["dense_static"]
        feedback = FeedbackDenseSearcher(route, None, index.doc_vectors, rcfg.fusion.feedback_docs,
                                         rcfg.fusion.feedback_weight)
        batch.extra[feedback_key(None)] = runs["bm25"]
        runs["dense_feedback"] = feedback.search_batch(batch, rcfg.fusion.depth_of("dense_feedback"))
    if "bm25_rm3" in heads:
        rm3 = Bm25ModeSearcher(bm25_index, bm25_cfg, rm3=True)
        try:
            runs["bm25_rm3"] = rm3.search_batch(batch, rcfg.fusion.depth_of("bm25_rm3"))
        finally:
            rm3.close()
    return runs


def away_sets(tuning: list, train_dataset: str) -> list:
    """The tuning sets of datasets other than `train_dataset` (its dev carve is named after it, its own
    dev split `<name>/<split>`)."""
    return [t for t in tuning if t.name != train_dataset and not t.name.startswith(f"{train_dataset}/")]


def fixed_weights(weights: list[float], runs: list[str], mode: str) -> list[float]:
    """`weights` (index.fusion.zero_shot_weights of `mode`) normalised to sum 1, one per fused run."""
    if len(weights) != len(runs):
        raise ConfigError(f"index.fusion.zero_shot_weights.{mode}: {len(weights)} weights for the {len(runs)} runs "
                          f"{mode} fuses ({', '.join(runs)})")
    total = sum(weights)
    return [round(w / total, 6) for w in weights]


def _cut(run: dict, depth: int) -> dict:
    """Each query's `depth` best hits of `run` (ties by doc id, as the searchers rank)."""
    return {q: dict(ranked(hits, depth)) for q, hits in run.items()}


def learn_fusion(ctx: StageContext, cfg: IndexConfig, rcfg: RetrievalConfig, dataset: BeirDataset,
                  docids: list[str], encoded, encoder, cache_key: str | None, static=None) -> dict[str, Any] | None:
    """Weights of each fusion mode learned on the dev splits (never a test split).

    Tuning sets: the dev carve of the train dataset (bm25 stage: dev_qrels.tsv; its BM25 run is in
    train_run.trec) and the `data.dev.split` of each of `data.dev.datasets` (bm25 stage:
    dev_runs/). Dense and lexical runs come from exact in-memory search over the bundle's own
    encodings (the same quantized impacts as the Lucene index); another dataset's corpus is encoded
    by the bundle's ONNX encoder into the encoding cache, where the evaluate stage finds it.
    """
    from uniret.core.runs import read_run
    from uniret.data.beir import read_qrels
    from uniret.evaluation.fusion_tuning import TuningSet, learn_fusion_weights
    from uniret.retrieval.corpus_cache import cached_corpus_encoding
    from uniret.retrieval.modes import fused_runs

    data = ctx.params.section("data")
    # a fusion needs every head it fuses: a dense-only model (led, clear, aggretriever) has no lexicon
    have = {"dense": encoded.dense is not None, "lexical": encoded.sparse is not None, **dict.fromkeys(BM25_SIGNALS, True),
            "dense_static": static is not None and encoded.dense is not None,
            "lexical_static": static is not None and encoded.sparse is not None}
    have["dense_feedback"] = have["dense_static"]
    modes = [m for m in FUSION_MODES if m in rcfg.modes and all(have.get(r, False) for r in fused_runs(m, rcfg))]
    dev_path = ctx.require("bm25") / DEV_QRELS
    if not cfg.fusion.enabled or not modes or not dev_path.is_file():
        return None
    # every fused run but the bm25 stage's own (bm25_rm3, when fused, is searched by tuning_runs)
    heads = sorted({m for mode in modes for m in fused_runs(mode, rcfg)} - {"bm25"})
    bm25_cfg = ctx.params.section("bm25")
    bm25_indexes = ctx.require("bm25") / BM25_INDEXES
    sets: list[tuple[str, dict, dict[str, Any]]] = []  # (name, qrels, runs)
    qrels = read_qrels(dev_path)
    queries = {q: t for q, t in dataset.split_queries(data.train_split).items() if q in qrels}
    if queries:
        train_run = read_run(ctx.require("bm25") / TRAIN_RUN)
        sets.append((dataset.name, qrels, tuning_runs(queries, docids, encoded, encoder, rcfg, heads, train_run,
                                                        bm25_indexes / dataset.name, bm25_cfg, static)))
    cache_root = ctx.artifacts / ctx.params.section("encoding").cache_dir
    for name in (n for n in data.dev.datasets if n in data.eval_datasets):  # the bm25 stage ran only these
        other = ctx.dataset(name)
        docs = list(other.iter_corpus())
        other_ids = [d.id for d in docs]
        encode = lambda docs=docs: encoder.encode([d.contents for d in docs], is_query=False)  # noqa: E731
        other_enc = (cached_corpus_encoding(cache_root, cache_key, other.corpus_path, other_ids, encode,
                                            label=f"index/{name}") if cache_key else encode())
        bm25_run = read_run(ctx.require("bm25") / DEV_RUNS / f"{name}.trec")
        other_static = (static.for_corpus([d.contents for d in docs], encoder.max_length[False])
                        if static is not None and cfg.static_query.corpus_idf else static)
        sets.append((f"{name}/{data.dev.split}", other.qrels(data.dev.split),
                     tuning_runs(other.split_queries(data.dev.split), other_ids, other_enc, encoder, rcfg, heads,
                                  bm25_run, bm25_indexes / name, bm25_cfg, other_static)))
    if not sets:
        return None
    out: dict[str, Any] = {"sets": {n: len(q) for n, q, _ in sets}, "metric": cfg.fusion.metric,
                           "grid_step": cfg.fusion.grid_step, "modes": {}}
    for mode in modes:
        names = fused_runs(mode, rcfg)
        # each run cut to the depth the mode's searcher takes from it (min-max reads the run's bottom)
        depth = {m: rcfg.fusion.fast_depth if mode == "hybrid_fast" else rcfg.fusion.depth_of(m) for m in names}
        tuning = [TuningSet(n, [_cut(runs[m], depth[m]) for m in names], q) for n, q, runs in sets]
        choice = learn_fusion_weights(tuning, cfg.fusion.grid_step, cfg.fusion.metric)
        out["modes"][mode] = entry = {
            "runs": names, "weights": choice.weights, "dev_score": round(choice.score, 5),
            "dev_single": dict(zip(names, [round(x, 5) for x in choice.single_scores], strict=True))}
        # another corpus gets weights learned on the other corpora's dev sets only: trained on the train
        # queries, the heads are stronger on their own corpus than elsewhere (E42)
        away = away_sets(tuning, dataset.name)
        if away and len(away) < len(tuning):
            other = learn_fusion_weights(away, cfg.fusion.grid_step, cfg.fusion.metric)
            entry.update(zero_shot_weights=other.weights, zero_shot_dev_score=round(other.score, 5),
                         zero_shot_sets=[t.name for t in away])
        elif not away and mode in cfg.fusion.zero_shot_weights:  # none to learn them on: the configured ones (E77)
            entry.update(zero_shot_weights=fixed_weights(cfg.fusion.zero_shot_weights[mode], names, mode),
                         zero_shot_sets=[])
        if away and mode in cfg.fusion.zero_shot_weights:
            log.warning("index: index.fusion.zero_shot_weights.%s not used: dev sets away from %s exist (%s)", mode,
                        dataset.name, ", ".join(t.name for t in away))
        log.info("index: %s weights %s on dev sets %s: %s %.4f (single runs %s); other corpora: %s", mode,
                 dict(zip(names, choice.weights, strict=True)), out["sets"], cfg.fusion.metric, choice.score,
                 entry["dev_single"], entry.get("zero_shot_weights"))
    return out
