"""Levers for the served hybrid, measured on the dev sets only (never a test split).

    python lab/dev_levers.py fusion-norm --artifacts artifacts --registry registry
    python lab/dev_levers.py query-tower --artifacts artifacts --registry registry --layers 3 2
    python lab/dev_levers.py wise-checkpoint --checkpoint artifacts/continual/model --alpha 0.75 \
        --model-out DIR/continual/model
    python lab/dev_levers.py prf --artifacts artifacts --registry registry
    python lab/dev_levers.py bm25-signal --artifacts artifacts --registry registry
    python lab/dev_levers.py paired --artifacts A --bundle A/index/bundle \
        --other-artifacts B --other-bundle B/index/bundle

- fusion-norm: the served fusion's score normalisation. Per query, each signal's top 1000 (lexical,
  dense, BM25) is normalised by min-max (served), z-score, theoretical min-max (Bruch et al. 2023:
  the lower bound is the score's floor, not the query's minimum) or reciprocal rank; for each, the
  weights are learned on the dev grid as the index stage does, and the best dev score is reported.
- query-tower: a cheaper dense query side. The student is the trained MiniLM's first L layers
  (mean pool, normalise), distilled to the full tower's query embedding (1 - cosine) on label-free
  text: the train queries that are not in the dev carve, NFCorpus train queries and the train
  corpus's titles. Documents keep the full tower's vectors. Reports dev nDCG@10 of the dense head
  and of the served fusion (the bundle's weights) and torch CPU ms per query at one thread.
  `--rank-weight` adds a ranking KL over the full tower's top train-corpus documents.
- wise-checkpoint: WiSE-FT (Wortsman et al. 2022), the trained checkpoint's weights interpolated
  with its pretrained start, alpha x trained + (1 - alpha) x pretrained, written as a checkpoint
  folder (`--model-out DIR/continual/model`) for `uniret index --artifacts DIR` to index and score
  on dev (DIR holding links to the demo's validate, bm25, mine and warmup folders).

- prf: pseudo-relevance feedback (Rocchio) on the served fusion: each query's dense and/or lexicon
  vector moves toward the mean of the fused top-k documents' vectors (the lexicon's feedback kept
  to its top `terms` entries and scaled to the query's own mass), both heads search again, and the
  fusion is scored with the bundle's weights. Exact float products over the whole corpus, also for
  the no-feedback row it is compared with.
- bm25-signal: the served fusion's BM25 signal. Each variant (BM25 k1/b settings; BM25 + RM3 with
  several fb_terms/fb_docs/original-query weights) replaces the BM25 run of every dev set, the
  fusion weights are learned on the dev grid as the index stage learns them, and the best dev
  score is reported with the variant's own score alone. RM3 reads document vectors: where the bm25
  stage's index lacks them (built before it stored them), a temporary index is built.
- paired: is bundle B's served fusion better than bundle A's on dev, or lucky? Each bundle's
  `hybrid_bm25` (its own learned weights) is scored per query on every dev set (each with its own
  artifacts' BM25 runs and encoding cache), and a paired bootstrap over queries
  (uniret.evaluation.significance) gives B - A, its 95% interval and the share of resamples where
  B is not better. Reports each head's difference the same way.

Inputs: a `make demo` artifacts folder (bm25 stage: dev qrels and BM25 dev runs; the index
stage's encoding cache) and its bundle. Results: lab/results/dev_levers.json, one key per
lever. Take timings on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import logging
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from uniret.config import load_params
from uniret.config.sections import Rm3Config
from uniret.core.runs import Run, ranked, read_run
from uniret.data.beir import BeirDataset, iter_corpus, read_qrels
from uniret.evaluation.bundle_source import bundle_encoder_key
from uniret.evaluation.fusion_tuning import fused_metric, fused_run, simplex_grid
from uniret.evaluation.metrics import evaluate_run
from uniret.evaluation.significance import paired_bootstrap, per_query_pairs
from uniret.retrieval.base import QueryBatch, encode_queries
from uniret.retrieval.bm25 import Bm25ModeSearcher
from uniret.retrieval.bundle import ONNX_DIR, fusion_weights_of, open_bundle
from uniret.retrieval.corpus_cache import cached_corpus_encoding
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.modes import build_searchers, memory_corpus_index
from uniret.retrieval.ranking import hits_dict, tie_ranks, top_k_ranked
from uniret.serving.source import BundleSource
from uniret.stages.bm25 import DEV_QRELS, DEV_RUNS, TRAIN_RUN
from uniret.utils.files import atomic_write_json, shown_path

log = logging.getLogger("dev_levers")
SIGNALS = ("lexical", "dense", "bm25")  # the order of the served hybrid_bm25's weights
DEPTH = 1000  # per signal, as retrieval.fusion serves
METRIC = "ndcg@10"
NORMS = ("minmax", "zscore", "theoretical_minmax", "rrf")
RRF_K = 60
RANK_POOL = 64  # documents per text in the ranking-distillation term
# bm25-signal: (k1, b, RM3 (fb_terms, fb_docs, original_query_weight) or None); the first is the default
BM25_VARIANTS = ((0.9, 0.4, None), (1.2, 0.75, None), (0.6, 0.3, None), (1.2, 0.4, None), (0.9, 0.6, None),
                 (1.5, 0.5, None), (0.7, 0.5, None), (0.9, 0.4, (10, 10, 0.5)), (0.9, 0.4, (20, 10, 0.5)),
                 (0.9, 0.4, (10, 5, 0.7)), (0.9, 0.4, (10, 3, 0.7)), (0.9, 0.4, (20, 10, 0.3)))


@dataclass
class DevSet:
    """One dev split with the served signals' runs on it."""

    name: str
    qrels: dict
    queries: dict[str, str]
    docids: list[str]
    dense: np.ndarray  # the corpus's dense vectors (the bundle's encodings)
    runs: dict[str, Run]
    sparse: sp.csr_matrix | None = None  # the corpus's lexicon vectors
    query_vectors: EncodedTexts | None = None  # the queries' encodings, in `queries` order


def dev_sets(artifacts: Path, data_root: Path, params, bundle) -> list[DevSet]:
    """SciFact's dev carve and each data.dev dataset's dev split, with exact lexical/dense runs over
    the bundle's encodings (read from the index stage's cache, else encoded) and the BM25 runs."""
    data = params.section("data")
    encoding = params.section("encoding")  # corpora at the corpus-pass batch size, as the index stage
    key = bundle_encoder_key(bundle.manifest, bundle.path / ONNX_DIR, encoding.batch_size)
    doc_encoder = bundle.encoder.with_batch_size(encoding.batch_size)
    cache = artifacts / encoding.cache_dir
    carve = read_qrels(artifacts / "bm25" / DEV_QRELS)
    train = BeirDataset(data_root / data.train_dataset)
    specs = [(train, {q: t for q, t in train.split_queries(data.train_split).items() if q in carve}, carve,
              read_run(artifacts / "bm25" / TRAIN_RUN))]
    for name in data.dev.datasets:
        ds = BeirDataset(data_root / name)
        specs.append((ds, ds.split_queries(data.dev.split), ds.qrels(data.dev.split),
                      read_run(artifacts / "bm25" / DEV_RUNS / f"{name}.trec")))
    out = []
    for ds, queries, qrels, bm25 in specs:
        docs = list(ds.iter_corpus())
        docids = [d.id for d in docs]
        encoded = cached_corpus_encoding(
            cache, key, ds.corpus_path, docids,
            lambda docs=docs: doc_encoder.encode([d.contents for d in docs], is_query=False), label=f"dev/{ds.name}")
        searchers = build_searchers(memory_corpus_index(docids, encoded, bundle.retrieval), bundle.retrieval,
                                    bundle.encoder, modes=["lexical", "dense"])
        batch = encode_queries(queries, bundle.encoder)
        runs = {m: searchers[m].search_batch(batch, DEPTH) for m in ("lexical", "dense")}
        runs["bm25"] = {q: dict(ranked(bm25.get(q, {}), DEPTH)) for q in queries}
        out.append(DevSet(f"{ds.name}/dev", qrels, queries, docids, encoded.dense, runs, encoded.sparse, batch.encoded))
    return out


def normalise(method: str, signal: str, scores: np.ndarray, floor: dict[str, float]) -> tuple[np.ndarray, float]:
    """(normalised scores of one query's hits, best first; the value a missing document gets)."""
    if method == "rrf":
        return 1.0 / (RRF_K + np.arange(1, len(scores) + 1)), 0.0
    if method == "zscore":
        sd = scores.std()
        z = (scores - scores.mean()) / sd if sd > 0 else np.zeros_like(scores)
        return z, float(z.min())
    lo = floor[signal] if method == "theoretical_minmax" else scores.min()
    hi = scores.max()
    return (np.ones_like(scores) if hi <= lo else (scores - lo) / (hi - lo)), 0.0


def _matrices(method: str, ds: DevSet, floor: dict[str, float]) -> dict[str, tuple[list[str], np.ndarray]]:
    out = {}
    for q in ds.qrels:
        cands = sorted({d for s in SIGNALS for d in ds.runs[s].get(q, {})})
        col = {d: i for i, d in enumerate(cands)}
        matrix = np.zeros((len(SIGNALS), len(cands)))
        for r, s in enumerate(SIGNALS):
            hits = ranked(ds.runs[s].get(q, {}))
            if hits:
                values, missing = normalise(method, s, np.array([v for _, v in hits]), floor)
                matrix[r, :] = missing
                matrix[r, [col[d] for d, _ in hits]] = values
        out[q] = (cands, matrix)
    return out


def _fused_ndcg(matrices, qrels, weights) -> float:
    """nDCG@10 of one dev set's fusion, by the index stage's own scoring (fusion_tuning)."""
    return fused_metric(matrices, qrels, weights, METRIC, 10, True)


def fusion_norm(sets: list[DevSet], step: float, query_scale: float) -> dict:
    """Per normalisation: the dev-learned weights and the dev score (mean over the dev sets)."""
    # floors: impacts and BM25 are >= 0; the dense score is query_scale x cosine >= -query_scale
    floor = {"lexical": 0.0, "bm25": 0.0, "dense": -query_scale}
    grid = simplex_grid(len(SIGNALS), step)
    out = {}
    for method in NORMS:
        prepared = [(_matrices(method, ds, floor), ds.qrels) for ds in sets]
        scores = [float(np.mean([_fused_ndcg(m, q, w) for m, q in prepared])) for w in grid]
        best = int(np.argmax(scores))
        out[method] = {"weights": dict(zip(SIGNALS, grid[best], strict=True)), "dev_" + METRIC: round(scores[best], 5)}
        log.info("%s: dev %s %.4f with %s", method, METRIC, scores[best], out[method]["weights"])
    out["chosen"] = max(NORMS, key=lambda m: out[m]["dev_" + METRIC])
    return out


def _distill_texts(artifacts: Path, data_root: Path, params, seed: int) -> list[str]:
    data = params.section("data")
    carve = read_qrels(artifacts / "bm25" / DEV_QRELS)
    train = BeirDataset(data_root / data.train_dataset)
    texts = [t for q, t in train.split_queries(data.train_split).items() if q not in carve]
    for name in data.dev.datasets:
        texts += list(BeirDataset(data_root / name).split_queries(data.train_split).values())
    texts += [d.title for d in iter_corpus(train.corpus_path) if d.title]
    texts = sorted(set(texts))
    random.Random(seed).shuffle(texts)
    return texts


def query_tower(sets: list[DevSet], bundle, checkpoint: Path, texts: list[str], layers: list[int], steps: int,
                batch: int, lr: float, seed: int, rank_weight: float = 0.0, corpus: np.ndarray | None = None) -> dict:
    """Dev nDCG@10 (dense head, served fusion) and torch CPU ms/query of the full and distilled towers.

    `rank_weight` > 0 adds a ranking term: KL from the full tower's score distribution over its
    top RANK_POOL documents of `corpus` (the train corpus's dense vectors) to the student's.
    """
    import torch
    import torch.nn.functional as F

    from uniret.models.factory import load_model
    from uniret.models.pooling import mean_pool

    model, tokenizer = load_model(checkpoint)
    if getattr(model, "dense", None) is None or model.model_config.arch != "pair":
        raise SystemExit(f"{checkpoint}: query-tower needs a pair model (arch pair), got {model.model_config.arch}")
    mcfg = model.model_config
    weights = fusion_weights_of(bundle.manifest).get("hybrid_bm25")
    if weights is None:
        raise SystemExit(f"{bundle.path}: the bundle has no learned hybrid_bm25 weights")
    torch.manual_seed(seed)

    def embed(tower, items, grad=False):
        enc = tokenizer(items, padding=True, truncation=True, max_length=mcfg.query_max_length, return_tensors="pt")
        with torch.set_grad_enabled(grad):
            hidden = tower(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
            return F.normalize(mean_pool(hidden, enc["attention_mask"]), dim=-1)

    def evaluate(tower) -> dict:
        per_set = {}
        for ds in sets:
            qids = list(ds.queries)
            with torch.no_grad():
                vecs = torch.cat([embed(tower, [ds.queries[q] for q in qids[i:i + 64]])
                                  for i in range(0, len(qids), 64)]).numpy() * (mcfg.query_scale or 1.0)
            scores = vecs @ ds.dense.T
            top = np.argsort(-scores, axis=1)[:, :DEPTH]
            dense = {q: {ds.docids[j]: float(scores[i, j]) for j in top[i]} for i, q in enumerate(qids)}
            dense_top10 = {q: dict(ranked(h, 10)) for q, h in dense.items()}
            runs = dict(ds.runs, dense=dense)
            matrices = _matrices("minmax", DevSet(ds.name, ds.qrels, ds.queries, ds.docids, ds.dense, runs), {})
            per_set[ds.name] = {"dense": evaluate_run(ds.qrels, dense_top10, [METRIC], True)[1][METRIC],
                                "hybrid_bm25": _fused_ndcg(matrices, ds.qrels, weights)}
        return {"dense": round(float(np.mean([v["dense"] for v in per_set.values()])), 5),
                "hybrid_bm25": round(float(np.mean([v["hybrid_bm25"] for v in per_set.values()])), 5),
                "per_set": {k: {m: round(v, 5) for m, v in d.items()} for k, d in per_set.items()}}

    def cpu_ms(tower, n=200) -> float:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        with torch.no_grad():
            for q in texts[:20]:
                embed(tower, [q])
            start = time.process_time()
            for q in texts[:n]:
                embed(tower, [q])
        torch.set_num_threads(threads)
        return round((time.process_time() - start) / n * 1000, 2)

    teacher = model.dense.encoder.eval()
    with torch.no_grad():
        targets = torch.cat([embed(teacher, texts[i:i + 128]) for i in range(0, len(texts), 128)])
        scale = mcfg.query_scale or 1.0
        if rank_weight > 0:
            docs = torch.from_numpy(np.ascontiguousarray(corpus, dtype=np.float32))
            # per text: the full tower's top documents and its log-distribution over them
            top = [torch.topk(scale * targets[i:i + 512] @ docs.T, RANK_POOL) for i in range(0, len(texts), 512)]
            pool = torch.cat([t.indices for t in top])  # [texts, RANK_POOL]
            teacher_logp = torch.log_softmax(torch.cat([t.values for t in top]), dim=-1)
    full = len(teacher.encoder.layer)
    out = {"texts": len(texts), "steps": steps, "batch": batch, "lr": lr, "rank_weight": rank_weight,
           "towers": {str(full): {**evaluate(teacher), "cpu_ms": cpu_ms(teacher)}}}
    log.info("full tower (%d layers): %s", full, out["towers"][str(full)])
    rng = random.Random(seed)
    warm = max(1, steps // 10)  # linear warmup, then linear decay to 0
    for n_layers in layers:
        student = copy.deepcopy(teacher)
        student.encoder.layer = student.encoder.layer[:n_layers]
        student.config.num_hidden_layers = n_layers
        optimizer = torch.optim.AdamW(student.parameters(), lr=lr)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1 - s / steps))
        student.train()
        for step in range(steps):
            idx = [rng.randrange(len(texts)) for _ in range(batch)]
            emb = embed(student, [texts[i] for i in idx], grad=True)
            loss = (1 - (emb * targets[idx]).sum(-1)).mean()
            if rank_weight > 0:
                student_logp = torch.log_softmax(scale * torch.einsum("bd,bkd->bk", emb, docs[pool[idx]]), dim=-1)
                loss = loss + rank_weight * F.kl_div(student_logp, teacher_logp[idx], log_target=True,
                                                     reduction="batchmean")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            if step % 100 == 0 or step == steps - 1:
                log.info("%d layers: step %d, loss %.4f", n_layers, step, loss.item())
        student.eval()
        out["towers"][str(n_layers)] = {**evaluate(student), "cpu_ms": cpu_ms(student), "final_loss": round(loss.item(), 5)}
        log.info("%d layers: %s", n_layers, out["towers"][str(n_layers)])
    return out


PRF_SETTINGS = [(k, beta_dense, beta_lex, terms) for k in (3, 5, 10)
                for beta_dense, beta_lex in ((0.5, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0))
                for terms in ((0,) if beta_lex == 0 else (50, 200))]


FEEDBACK_POOL = max(k for k, *_ in PRF_SETTINGS)  # fused top documents kept per query for feedback


def fused_top_rows(ds: DevSet, weights, k: int = FEEDBACK_POOL) -> dict[str, list[int]]:
    """Per judged query: the corpus rows of the served fusion's top k (`weights` over SIGNALS),
    best first, ties by doc id as retrieval.ranking breaks them. Computed once per dev set: every
    feedback setting starts from the same fused ranking."""
    row = {d: i for i, d in enumerate(ds.docids)}
    out = {}
    for qid, (cands, matrix) in _matrices("minmax", ds, {}).items():
        # candidates come sorted by doc id, so their positions are the doc id tie order
        top = top_k_ranked(np.asarray(weights) @ matrix, k, np.arange(len(cands))) if cands else []
        out[qid] = [row[cands[j]] for j in top]
    return out


def feedback_runs(ds: DevSet, fused_top: dict[str, list[int]], k: int, beta_dense: float, beta_lex: float,
                  terms: int) -> dict[str, Run]:
    """Lexical and dense runs (top DEPTH, exact float products) after Rocchio feedback from each
    query's first k rows of `fused_top` (fused_top_rows); beta 0 leaves a head's query as it is."""
    ties = tie_ranks(ds.docids)
    q_dense, q_sparse = ds.query_vectors.dense, ds.query_vectors.sparse.tocsr()
    out: dict[str, Run] = {"lexical": {}, "dense": {}}
    for i, qid in enumerate(ds.queries):
        top = fused_top.get(qid, [])[:k]
        dense_q, lex_q = q_dense[i].astype(np.float64), q_sparse[i].toarray().ravel().astype(np.float64)
        if top and beta_dense:
            moved = dense_q + beta_dense * ds.dense[top].mean(axis=0)
            dense_q = moved * (np.linalg.norm(dense_q) / max(np.linalg.norm(moved), 1e-12))
        if top and beta_lex:
            fb = np.asarray(ds.sparse[top].mean(axis=0)).ravel()
            if terms:
                fb[np.argsort(-fb)[terms:]] = 0.0
            lex_q = lex_q + beta_lex * fb * (lex_q.sum() / max(fb.sum(), 1e-12))
        for name, scores in (("dense", ds.dense @ dense_q), ("lexical", ds.sparse @ lex_q)):
            rows = top_k_ranked(scores, DEPTH, ties)
            out[name][qid] = hits_dict(ds.docids, rows, scores[rows])
    return out


def prf(sets: list[DevSet], weights, settings=PRF_SETTINGS) -> dict:
    """Dev nDCG@10 of the served fusion (the bundle's weights) without and with each feedback setting."""
    fused_top = {ds.name: fused_top_rows(ds, weights) for ds in sets}

    def score(k, beta_dense, beta_lex, terms) -> dict:
        per_set = {}
        for ds in sets:
            runs = dict(ds.runs, **feedback_runs(ds, fused_top[ds.name], k, beta_dense, beta_lex, terms))
            fed = DevSet(ds.name, ds.qrels, ds.queries, ds.docids, ds.dense, runs)
            per_set[ds.name] = round(_fused_ndcg(_matrices("minmax", fed, {}), ds.qrels, weights), 5)
        return {"dev_" + METRIC: round(float(np.mean(list(per_set.values()))), 5), "per_set": per_set}

    out = {"weights": dict(zip(SIGNALS, weights, strict=True)), "no_feedback": score(1, 0.0, 0.0, 0), "settings": []}
    log.info("no feedback: %s", out["no_feedback"])
    for k, beta_dense, beta_lex, terms in settings:
        row = {"k": k, "beta_dense": beta_dense, "beta_lex": beta_lex, "terms": terms, **score(k, beta_dense, beta_lex, terms)}
        log.info("%s", row)
        out["settings"].append(row)
    best = max(out["settings"], key=lambda r: r["dev_" + METRIC])
    out["best"] = best
    out["best_gain"] = round(best["dev_" + METRIC] - out["no_feedback"]["dev_" + METRIC], 5)
    return out


def _index_with_vectors(stage_index: Path, dataset: BeirDataset, cfg, tmp: Path) -> Path:
    """The bm25 stage's index when it stores document vectors (RM3 reads them), else one built in `tmp`."""
    from uniret.lexical.bm25 import index_documents
    from uniret.lexical.bm25_arrays import Bm25ArraySearcher

    try:
        Bm25ArraySearcher(stage_index, cfg, rm3=True).close()
        return stage_index
    except ValueError:
        log.info("%s: no document vectors; indexing %s again into a temp folder", stage_index, dataset.name)
        out = tmp / dataset.name
        index_documents(dataset.iter_corpus(), out, cfg)
        return out


def bm25_signal(sets: list[DevSet], artifacts: Path, data_root: Path, cfg, step: float,
                variants=BM25_VARIANTS) -> dict:
    """Per BM25 variant: the served fusion's dev nDCG@10 with it as the third signal (weights learned
    on the dev grid) and its own dev nDCG@10; "stage_run" is the fusion over the bm25 stage's runs."""
    grid = simplex_grid(len(SIGNALS), step)

    def learned(sets_: list[DevSet]) -> dict:
        prepared = [(_matrices("minmax", d, {}), d.qrels) for d in sets_]
        scores = [float(np.mean([_fused_ndcg(m, q, w) for m, q in prepared])) for w in grid]
        best = int(np.argmax(scores))
        return {"dev_" + METRIC: round(scores[best], 5), "weights": dict(zip(SIGNALS, grid[best], strict=True)),
                "per_set": {d.name: round(_fused_ndcg(m, q, grid[best]), 5) for d, (m, q) in zip(sets_, prepared, strict=True)}}

    out = {"stage_run": learned(sets), "variants": []}
    with tempfile.TemporaryDirectory(prefix="bm25-signal-") as tmp:
        indexes = {}
        for d in sets:
            name = d.name.split("/")[0]
            indexes[d.name] = _index_with_vectors(artifacts / "bm25" / "indexes" / name,
                                                  BeirDataset(data_root / name), cfg, Path(tmp))
        for k1, b, rm3 in variants:
            vcfg = dataclasses.replace(cfg, k1=k1, b=b, rm3=Rm3Config(*rm3) if rm3 else cfg.rm3)
            swapped, alone = [], {}
            for d in sets:
                searcher = Bm25ModeSearcher(indexes[d.name], vcfg, rm3=rm3 is not None)
                try:
                    run = searcher.search_batch(QueryBatch.from_dict(d.queries), DEPTH)
                finally:
                    searcher.close()
                swapped.append(dataclasses.replace(d, runs={**d.runs, "bm25": run}))
                alone[d.name] = round(evaluate_run(d.qrels, run, [METRIC], True)[1][METRIC], 5)
            row = {"k1": k1, "b": b, "rm3": dict(zip(("fb_terms", "fb_docs", "original_query_weight"), rm3, strict=True))
                   if rm3 else None, **learned(swapped), "alone": alone}
            log.info("%s", row)
            out["variants"].append(row)
    out["best"] = max(out["variants"], key=lambda r: r["dev_" + METRIC])
    return out


def served_per_query(sets: list[DevSet], weights) -> dict[str, dict[str, dict[str, float]]]:
    """{dev set: {system: {qid: nDCG@10}}} of the served fusion (`weights`) and of each signal alone."""
    out = {}
    for ds in sets:
        matrices = _matrices("minmax", ds, {})
        systems = {"hybrid_bm25": fused_run(matrices, weights, 10),
                   **{s: {q: dict(ranked(ds.runs[s].get(q, {}), 10)) for q in ds.qrels} for s in SIGNALS}}
        out[ds.name] = {name: {q: v[METRIC] for q, v in evaluate_run(ds.qrels, run, [METRIC], True)[0].items()}
                        for name, run in systems.items()}
    return out


def paired(a: dict, b: dict, resamples: int, seed: int) -> dict:
    """B - A per system (served fusion and each head) with a paired bootstrap over the dev queries."""
    if set(a) != set(b):
        raise SystemExit(f"paired: the bundles were scored on different dev sets: {sorted(a)} vs {sorted(b)}")
    out = {}
    for system in ("hybrid_bm25", "dense", "lexical"):
        pairs = {name: per_query_pairs(a[name][system], b[name][system], name) for name in a}
        result = paired_bootstrap(pairs, resamples, seed=seed).as_dict()
        log.info("%s: B - A %+.4f (95%% %+.4f .. %+.4f; B not better in %.1f%% of resamples)", system,
                 result["diff"], result["ci_low"], result["ci_high"], 100 * result["share_not_better"])
        out[system] = result
    return out


def wise_checkpoint(checkpoint: Path, alpha: float, out: Path) -> dict:
    """Write alpha x the checkpoint's weights + (1 - alpha) x its pretrained start's to `out`."""
    from uniret.models.factory import build_model, load_model, save_model

    if not 0.0 <= alpha <= 1.0:
        raise SystemExit(f"--alpha must be in [0, 1], got {alpha}")
    trained, _ = load_model(checkpoint)
    start = build_model(trained.model_config).state_dict()
    mixed = {name: alpha * value + (1 - alpha) * start[name] if value.is_floating_point() else value
             for name, value in trained.state_dict().items()}
    trained.load_state_dict(mixed)
    save_model(trained, out)
    return {"checkpoint": str(checkpoint), "alpha": alpha, "model_out": str(out)}


def _served_weights(bundle) -> list[float]:
    weights = fusion_weights_of(bundle.manifest).get("hybrid_bm25")
    if weights is None:
        raise SystemExit(f"{bundle.path}: the bundle has no learned hybrid_bm25 weights")
    return weights


def _previous(out: Path) -> dict:
    return json.loads(out.read_text()) if out.is_file() else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lever", choices=["fusion-norm", "query-tower", "wise-checkpoint", "prf", "bm25-signal", "paired"])
    parser.add_argument("--artifacts", type=Path, default=Path("artifacts"))
    parser.add_argument("--registry", type=Path, default=Path("registry"), help="its production bundle is measured")
    parser.add_argument("--bundle", type=Path, default=None, help="a bundle folder instead of the registry's")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--checkpoint", type=Path, default=None, help="default: the bundle manifest's")
    parser.add_argument("--layers", type=int, nargs="+", default=[3, 2])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--rank-weight", type=float, default=0.0,
                        help="query-tower: weight of the ranking KL over the full tower's top documents (0: off)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=0.75, help="wise-checkpoint: weight of the trained weights")
    parser.add_argument("--model-out", type=Path, default=None, help="wise-checkpoint: the checkpoint folder to write")
    parser.add_argument("--other-artifacts", type=Path, default=None, help="paired: system B's artifacts folder")
    parser.add_argument("--other-bundle", type=Path, default=None, help="paired: system B's bundle (default: its index stage's)")
    parser.add_argument("--label", default=None, help="paired: the key B's result is stored under (default: its folder)")
    parser.add_argument("--resamples", type=int, default=10000, help="paired: bootstrap resamples")
    parser.add_argument("--out", type=Path, default=Path("lab/results/dev_levers.json"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    params = load_params(args.params, args.profile)
    if args.lever == "wise-checkpoint":
        if args.checkpoint is None or args.model_out is None:
            raise SystemExit("wise-checkpoint needs --checkpoint (e.g. artifacts/continual/model) and --model-out")
        print(json.dumps(wise_checkpoint(args.checkpoint, args.alpha, args.model_out)))
        return 0
    if args.bundle is None:
        found = BundleSource(registry_root=args.registry).production()
        if found is None:
            raise SystemExit(f"{args.registry}/production.json: no production bundle (give --bundle)")
        args.bundle = found[0]
    bundle = open_bundle(args.bundle)
    sets = dev_sets(args.artifacts, args.data, params, bundle)
    if args.lever == "prf":
        result = prf(sets, _served_weights(bundle))
    elif args.lever == "paired":
        if args.other_artifacts is None:
            raise SystemExit("paired needs --other-artifacts (system B's artifacts folder)")
        other = open_bundle(args.other_bundle or args.other_artifacts / "index" / "bundle")
        base = served_per_query(sets, _served_weights(bundle))
        variant = served_per_query(dev_sets(args.other_artifacts, args.data, params, other), _served_weights(other))
        label = args.label or shown_path(other.path, Path.cwd())
        result = {"comparisons": {**(_previous(args.out).get("paired") or {}).get("comparisons", {}),
                                  label: {"a": shown_path(bundle.path, Path.cwd()), "b": shown_path(other.path, Path.cwd()),
                                          "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                          **paired(base, variant, args.resamples, args.seed)}}}
    elif args.lever == "bm25-signal":
        result = bm25_signal(sets, args.artifacts, args.data, params.section("bm25"), params.section("index").fusion.grid_step)
    elif args.lever == "fusion-norm":
        result = fusion_norm(sets, params.section("index").fusion.grid_step, bundle.manifest["model"]["config"]["query_scale"])
    else:
        checkpoint = args.checkpoint or Path(bundle.manifest["model"]["checkpoint"])
        texts = _distill_texts(args.artifacts, args.data, params, args.seed)
        result = query_tower(sets, bundle, checkpoint, texts, args.layers, args.steps, args.batch, args.lr, args.seed,
                             args.rank_weight, sets[0].dense)  # sets[0]: the train dataset's dev carve
    previous = _previous(args.out)
    previous[args.lever] = {"bundle": shown_path(bundle.path, Path.cwd()), "dev_sets": {d.name: len(d.qrels) for d in sets},
                            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **result}
    atomic_write_json(args.out, previous)
    print(json.dumps(previous[args.lever], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
