"""Does BM25's top of a query make a better static dense query (E46)? Dev splits only.

The static tower is weak out of domain (words its distillation texts never held keep untrained
vectors), while BM25 is strong there and its top documents already have transformer vectors in the
bundle's index. A query's dense vector becomes the static tower's vector plus `beta` x the mean of
the vectors of BM25's top `k` documents (Rocchio feedback with BM25 as the first pass; `hybrid_fast`
already runs its BM25 route, so no second search is needed), then both are re-normalised. The fused
weights are learned per variant exactly as the index stage learns them (the SciFact dev carve and
NFCorpus dev; other corpora's weights on NFCorpus dev alone, E42).

    python lab/dense_feedback.py --out lab/results/dense_feedback.json
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np
from dag_args import add_dag_args, dag_context

VARIANTS = {  # name: (feedback source, k, beta)
    "none": (None, 0, 0.0),
    "bm25_k3_b0.5": ("bm25", 3, 0.5),
    "bm25_k3_b1": ("bm25", 3, 1.0),
    "bm25_k1_b0.5": ("bm25", 1, 0.5),
    "bm25_k2_b0.5": ("bm25", 2, 0.5),
    "bm25_k3_b0.25": ("bm25", 3, 0.25),
    "bm25_k3_b0.75": ("bm25", 3, 0.75),
    "bm25_k4_b0.5": ("bm25", 4, 0.5),
    "bm25_k5_b0.3": ("bm25", 5, 0.3),
    "bm25_k5_b0.5": ("bm25", 5, 0.5),
    "bm25_k5_b1": ("bm25", 5, 1.0),
    "bm25_k10_b1": ("bm25", 10, 1.0),
    "bm25_k5_b2": ("bm25", 5, 2.0),
    "dense_k5_b1": ("dense_static", 5, 1.0),  # classic dense Rocchio: a second dense search
}
# the sparse query too (with the dense feedback of E46 in place): + gamma x the unit mean impact vector
# of BM25's top k documents, its `terms` largest entries kept (name: (k, gamma, terms))
LEXICAL = {
    "dense+lex_k3_g0": (3, 0.0, 0),  # the float product of the unchanged query: checks the float path
    "dense+lex_k3_g0.25_t20": (3, 0.25, 20),
    "dense+lex_k3_g0.5_t20": (3, 0.5, 20),
    "dense+lex_k3_g1_t20": (3, 1.0, 20),
    "dense+lex_k3_g0.5_t50": (3, 0.5, 50),
    "dense+lex_k3_g0.5_t10": (3, 0.5, 10),
    "dense+lex_k5_g0.5_t20": (5, 0.5, 20),
}


def _top(run: dict, qid: str, k: int) -> list[str]:
    hits = run.get(qid, {})
    return sorted(hits, key=lambda d: (-hits[d], d))[:k]


def feedback_run(queries: list[str], qvecs: np.ndarray, docvecs: np.ndarray, docids: list[str], source: dict,
                 k: int, beta: float, depth: int) -> dict:
    """The dense run of the feedback queries, exact inner products, top `depth` per query."""
    row = {d: i for i, d in enumerate(docids)}
    out = {}
    for qi, qid in enumerate(queries):
        q = qvecs[qi] / max(np.linalg.norm(qvecs[qi]), 1e-12)
        top = [row[d] for d in _top(source, qid, k)]
        if top and beta > 0:
            centroid = docvecs[top].mean(axis=0)
            q = q + beta * centroid / max(np.linalg.norm(centroid), 1e-12)
        scores = docvecs @ q.astype(np.float32)
        best = np.argpartition(-scores, min(depth, len(scores) - 1))[:depth]
        out[qid] = {docids[i]: float(scores[i]) for i in best}
    return out


def _per_query(tuning, weights, metric: str) -> dict[str, float]:
    from uniret.evaluation.fusion_tuning import _normalised, fused_run
    from uniret.evaluation.metrics import evaluate_run

    depth = int(metric.split("@", 1)[1])
    prepared = {q: _normalised(tuning.runs, q) for q in tuning.qrels}
    per_query = evaluate_run(tuning.qrels, fused_run(prepared, weights, depth), [metric], True)[0]
    return {q: v[metric] for q, v in per_query.items()}


def _pair(a: dict[str, float], b: dict[str, float]):
    qids = sorted(a)
    return [a[q] for q in qids], [b[q] for q in qids]


def _interval(c) -> dict:
    return {"diff": round(c.diff, 5), "low": round(c.ci_low, 5), "high": round(c.ci_high, 5)}


def lexical_feedback_run(queries: list[str], qsparse, impacts, docids: list[str], source: dict, k: int,
                         gamma: float, terms: int, depth: int) -> dict:
    """The sparse run of the feedback queries: unit(q) + gamma x unit(top `terms` of the mean impact
    row of the source's top k documents), exact float products."""
    row = {d: i for i, d in enumerate(docids)}
    out = {}
    for qi, qid in enumerate(queries):
        q = np.asarray(qsparse[qi].todense()).ravel().astype(np.float64)
        q /= max(np.linalg.norm(q), 1e-12)
        top = [row[d] for d in _top(source, qid, k)]
        if top and gamma > 0:
            c = np.asarray(impacts[top].mean(axis=0)).ravel()
            if terms and np.count_nonzero(c) > terms:
                c[np.argsort(-c)[terms:]] = 0.0
            q = q + gamma * c / max(np.linalg.norm(c), 1e-12)
        scores = impacts @ q
        best = np.argpartition(-scores, min(depth, len(scores) - 1))[:depth]
        out[qid] = {docids[i]: float(scores[i]) for i in best if scores[i] > 0}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_dag_args(parser)
    parser.add_argument("--variants", nargs="*", choices=sorted({**VARIANTS, **LEXICAL}), default=list(VARIANTS))
    parser.add_argument("--baseline", default="none", help="the variant the others are compared with")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from uniret.core.runs import read_run
    from uniret.core.stage_files import DEV_QRELS, DEV_RUNS, TRAIN_RUN
    from uniret.data.beir import read_qrels
    from uniret.evaluation.fusion_learning import _cut, tuning_runs
    from uniret.evaluation.fusion_tuning import TuningSet, learn_fusion_weights
    from uniret.evaluation.significance import paired_bootstrap
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.corpus_cache import cached_corpus_encoding
    from uniret.stages import index as index_stage

    ctx = dag_context(args)
    cfg, rcfg, data = (ctx.params.section(s) for s in ("index", "retrieval", "data"))
    bundle = open_bundle(ctx.stage_dir("index") / "bundle")
    manifest = bundle.manifest
    static = bundle.index.static_query
    depth = rcfg.fusion.fast_depth
    batch = ctx.params.section("encoding").batch_size
    key = index_stage._cache_key(manifest["model"], manifest["onnx"]["doc_int8"]["used"], batch)
    root = ctx.artifacts / ctx.params.section("encoding").cache_dir
    encoder = bundle.encoder.with_batch_size(batch)

    def missing():
        raise RuntimeError("corpus not in the encoding cache: run the index stage first")

    sets = []  # (name, qrels, queries, runs, static query vectors, doc vectors, doc ids)
    train = ctx.dataset(data.train_dataset)
    carve = read_qrels(ctx.stage_dir("bm25") / DEV_QRELS)
    specs = [(train.name, train, {q: t for q, t in train.split_queries(data.train_split).items() if q in carve}, carve,
              read_run(ctx.stage_dir("bm25") / TRAIN_RUN), static)]
    for name in data.dev.datasets:
        other = ctx.dataset(name)
        texts = [d.contents for d in other.iter_corpus()]
        specs.append((f"{name}/{data.dev.split}", other, other.split_queries(data.dev.split),
                      other.qrels(data.dev.split), read_run(ctx.stage_dir("bm25") / DEV_RUNS / f"{name}.trec"),
                      static.for_corpus(texts, encoder.max_length[False])))
    for set_name, dataset, queries, qrels, bm25_run, set_static in specs:
        docids = [d.id for d in dataset.iter_corpus()]
        encoded = cached_corpus_encoding(root, key, dataset.corpus_path, docids, missing)
        runs = tuning_runs(queries, docids, encoded, encoder, rcfg, ["dense_static", "lexical_static"], bm25_run,
                           None, None, set_static)
        qids = list(queries)
        qvecs = set_static.encode([queries[q] for q in qids]).dense
        sets.append((set_name, qrels, qids, {m: _cut(r, depth) for m, r in runs.items()}, qvecs,
                     np.asarray(encoded.dense, dtype=np.float32), docids,
                     set_static.encode([queries[q] for q in qids]).sparse, encoded.sparse.tocsr()))
        logging.info("%s: %d queries, %d documents", set_name, len(qids), len(docids))

    per_query: dict[str, dict[str, dict[str, float]]] = {}
    # the index stage's bundle of --artifacts, named by its checkpoint (no machine path in the results)
    results = {"bundle": "<artifacts>/index/bundle", "checkpoint_sha256": manifest["model"].get("checkpoint_sha256"),
               "fast_depth": depth, "variants": {}}
    for name in args.variants:
        source, k, beta = VARIANTS.get(name, ("bm25", 3, 0.5))  # a LEXICAL variant: E46's dense feedback
        start = time.perf_counter()
        tuning = []
        for set_name, qrels, qids, runs, qvecs, docvecs, docids, qsparse, impacts in sets:
            dense = runs["dense_static"] if source is None else feedback_run(
                qids, qvecs, docvecs, docids, runs[source], k, beta, depth)
            lexical = runs["lexical_static"]
            if name in LEXICAL:
                lk, gamma, terms = LEXICAL[name]
                lexical = lexical_feedback_run(qids, qsparse, impacts, docids, runs["bm25"], lk, gamma, terms, depth)
            tuning.append(TuningSet(set_name, [runs["bm25"], lexical, dense], qrels))
        both = learn_fusion_weights(tuning, cfg.fusion.grid_step, cfg.fusion.metric)
        per_set = {t.name: learn_fusion_weights([t], cfg.fusion.grid_step, cfg.fusion.metric) for t in tuning}
        zero_shot = [t for t in tuning if t.name != train.name]
        away = learn_fusion_weights(zero_shot, cfg.fusion.grid_step, cfg.fusion.metric)
        # per-query nDCG with the weights each set is served with (its own corpus: `both`; others: `away`)
        per_query[name] = {t.name: _per_query(t, both.weights if t.name == train.name else away.weights, cfg.fusion.metric)
                           for t in tuning}
        base = per_query.get(args.baseline)
        paired = {} if base is None or name == args.baseline else {
            label: _interval(paired_bootstrap({n: _pair(base[n], per_query[name][n]) for n in names}))
            for label, names in (("dev", [t.name for t in tuning]), ("zero_shot_dev", [t.name for t in zero_shot]))}
        results["variants"][name] = {
            "source": source, "k": k, "beta": beta, "weights": both.weights, "dev_score": round(both.score, 5),
            "zero_shot_weights": away.weights, "zero_shot_dev_score": round(away.score, 5),
            "dense_alone": {n: round(c.single_scores[2], 5) for n, c in per_set.items()},
            "lexical_alone": {n: round(c.single_scores[1], 5) for n, c in per_set.items()},
            "best_per_set": {n: round(c.score, 5) for n, c in per_set.items()},
            "vs_" + args.baseline: paired, "seconds": round(time.perf_counter() - start, 1)}
        logging.info("%s: %s", name, results["variants"][name])
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
