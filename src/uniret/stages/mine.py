"""Stage mine: self-mined hard negatives N_den and N_lex (UnifieR Eq. 8; LED's N_mix).

Encodes the training corpus and queries with the warm-up model (uniret.retrieval.encoding; corpus
encodings cached per model and corpus; on a CPU through its ONNX twin, uniret.export.twin),
retrieves the top `training.mine.depth` per head (dense: exact faiss inner product; lexical: exact
sparse products over quantized impacts, as the impact index scores) and samples `per_channel`
negatives per head from the rank window (positives excluded). LED mines N_lex with its frozen
lexical teacher (recipe plan `lexical_miner: teacher`).
Outputs artifacts/mine/:
  negatives.jsonl        N_den U N_lex per query (the format of bm25's negatives.jsonl)
  <channel>.jsonl        each head's negatives alone (dense.jsonl, sparse.jsonl)
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from uniret.core.runs import Run
from uniret.data.negatives import NegativesRecord, write_negatives
from uniret.runtime import StageContext, stage_output
from uniret.stages.recipe_stage import (
    NEGATIVES,
    SECTIONS,
    active_recipe,
    model_dir,
    negatives_file,
    read_records,
    write_skipped,
)
from uniret.training.mining import merge_negatives, positive_recall, sample_window

log = logging.getLogger("uniret.stages")

STAGE = "mine"


def _miners(ctx: StageContext, recipe, warmup_dir: Path) -> dict[str, tuple[Any, Any, Path | None]]:
    """{channel: (encoder model, tokenizer, checkpoint or None)} of each mining head."""
    from uniret.models.factory import load_model
    from uniret.stages.teachers import lexical_teacher_model

    model, tokenizer = load_model(warmup_dir)
    miners = {}
    for channel in recipe.plan.mine_channels:
        if channel == "sparse" and recipe.plan.lexical_miner == "teacher":
            teacher = lexical_teacher_model(ctx, recipe.model)
            miners[channel] = (teacher.inner, teacher.tokenizer, teacher.checkpoint)
        elif channel in model.channels:
            miners[channel] = (model, tokenizer, warmup_dir)
        else:
            raise ValueError(
                f"mine: recipe {recipe.name!r} mines with the {channel} head but its model has only "
                f"{list(model.channels)}; fix mine_channels or lexical_miner in recipes/{recipe.name}.yaml"
            )
    return miners


class _Miner:
    """One model's mining encoder, its shard spec and its corpus-cache key: the torch model, or a
    LazyTwin of it (uniret.export.twin) whose twin the first corpus pass makes."""

    def __init__(self, encoder, spec, key: str):
        self.encoder, self.spec, self.key = encoder, spec, key

    @property
    def kind(self) -> str:
        """"onnx" once the twin took over, else "torch"."""
        return "onnx" if getattr(self.encoder, "made", False) else "torch"

    def for_corpus(self, queries: list[str], texts: list[str]):
        """(encoder, shard spec) of a corpus pass: the twin if it can be made."""
        from uniret.export.twin import TOKENIZER_DIR, corpus_encoder
        from uniret.retrieval.sharded import EncoderSpec

        encoder = corpus_encoder(self.encoder, queries, texts)
        if self.kind == "onnx" and self.spec.kind != "onnx":  # the twin was just made: its spec, once
            folder = self.encoder.folder
            self.spec = EncoderSpec("onnx", str(folder), self.spec.batch_size, self.spec.query_max_length,
                                    self.spec.doc_max_length, tokenizer=str(folder / TOKENIZER_DIR))
        return encoder, self.spec


def _miners_encoders(ctx: StageContext, cfg, miners, work: Path) -> dict[str, _Miner]:
    """{channel: _Miner}, one per distinct model; a warm-up checkpoint's model may run as its ONNX
    twin when `cfg.encoder` is onnx, else torch (fp32 or `cfg.amp`, documents cut at `cfg.doc_max_length`)."""
    from uniret.export.twin import LazyTwin
    from uniret.retrieval.corpus_cache import model_key
    from uniret.retrieval.encoding import TorchTextEncoder

    batch = ctx.params.section("encoding").batch_size
    built: dict[int, _Miner] = {}
    for model, tokenizer, checkpoint in miners.values():
        if id(model) in built:
            continue
        mcfg = model.model_config
        encoder = TorchTextEncoder(model, tokenizer, batch, mcfg.query_max_length,
                                   cfg.doc_max_length or mcfg.doc_max_length, amp=cfg.amp)
        # the twin's fp32 encodings are the torch model's (export parity): one cache entry for both
        key = model_key(model, checkpoint) + encoder.variant_key()  # shorter documents, bf16: their own entry
        spec = _shard_spec(checkpoint, encoder)
        if cfg.encoder == "onnx" and spec is not None:  # the index stage's parity bounds and parity texts
            encoder = LazyTwin(encoder, work / f"model-{len(built)}", ctx.params.section("index").export)
        built[id(model)] = _Miner(encoder, spec, key)
    return {channel: built[id(model)] for channel, (model, _, _) in miners.items()}


def _rank(ctx: StageContext, channel: str, miner: _Miner, docs, queries, depth: int):
    """(run of the top `depth`, {qid: weakest positive score} helper inputs) of one head."""
    from uniret.retrieval.corpus_cache import cached_corpus_encoding
    from uniret.retrieval.lexical import MemoryImpactIndex
    from uniret.retrieval.sharded import encode_corpus

    rcfg = ctx.params.section("retrieval")
    docids, texts, corpus_path = docs
    dist = ctx.params.section("distributed")
    doc_enc = cached_corpus_encoding(
        ctx.artifacts / ctx.params.section("encoding").cache_dir, miner.key, corpus_path, docids,
        lambda: encode_corpus(*miner.for_corpus(list(queries.values()), texts), texts, docids, dist.encode_shards,
                              dist.encode_threads),
        label=f"mine/{channel}",
    )
    qids = list(queries)
    q_enc = miner.encoder.encode([queries[q] for q in qids], is_query=True)
    if channel == "dense":
        scores, idx = _exact_dense_search(doc_enc.dense, q_enc.dense, min(depth, len(docids)))
        run: Run = {q: {docids[j]: float(s) for j, s in zip(row_i, row_s, strict=True) if j >= 0}
                    for q, row_i, row_s in zip(qids, idx, scores, strict=True)}
        exact = lambda i, rows: q_enc.dense[i] @ doc_enc.dense[rows].T  # noqa: E731
    else:
        impacts = MemoryImpactIndex(docids, doc_enc.sparse, rcfg.lexical.quant, rcfg.lexical.top_n)
        run = impacts.top_k(qids, q_enc.sparse, depth)
        exact = lambda i, rows: impacts.scores(q_enc.sparse[i]).toarray()[0][rows]  # noqa: E731
    return run, qids, exact


def _exact_dense_search(docs: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, indices) of each query's k best documents by inner product: faiss Flat, or numpy where
    faiss is not installed (the GPU check's machine), the same exact ranking."""
    from uniret.config.retrieval import DenseIndexConfig

    queries = np.ascontiguousarray(queries, dtype=np.float32)
    try:
        from uniret.retrieval.dense import build_faiss_index
    except ImportError:
        from uniret.retrieval.base import top_k_rows

        idx, scores = top_k_rows(queries @ np.asarray(docs, dtype=np.float32).T, k)
        return scores, idx
    index = build_faiss_index(docs, DenseIndexConfig(type="flat", use_gpu=False))
    return index.search(queries, k)


def _shard_spec(checkpoint, encoder):
    """How shard workers rebuild the encoder: the checkpoint folder when `encoder` runs the whole
    model saved there (None otherwise, e.g. a teacher's channel: it then encodes in this process)."""
    from uniret.models.factory import read_model_config
    from uniret.retrieval.sharded import EncoderSpec

    if checkpoint is None or getattr(encoder.model, "model_config", None) != read_model_config(checkpoint):
        return None
    return EncoderSpec("torch", str(checkpoint), encoder.batch_size, encoder.max_length[True], encoder.max_length[False],
                       amp=encoder.amp)


def run(ctx: StageContext) -> dict[str, Any]:
    """Mine N_den / N_lex with the warm-up model (see module doc); returns the manifest metrics."""
    recipe = active_recipe(ctx)
    if not recipe.runs(STAGE):
        return write_skipped(ctx, STAGE, recipe.name)
    cfg = recipe.training.mine
    data = ctx.params.section("data")
    bm25_negatives = negatives_file(ctx, "bm25")
    records = read_records(bm25_negatives)
    if cfg.max_queries is not None:
        records = sorted(records, key=lambda r: r.query_id)[: cfg.max_queries]
    dataset = ctx.dataset(data.train_dataset)
    corpus = list(dataset.iter_corpus())
    docids = [d.id for d in corpus]
    row = {d: i for i, d in enumerate(docids)}
    docs = (docids, [d.contents for d in corpus], dataset.corpus_path)
    queries = {r.query_id: r.query for r in records}
    positives = {r.query_id: [p for p in r.positives if p in row] for r in records}
    warmup = model_dir(ctx, "warmup")

    mined: dict[str, dict[str, list[str]]] = {}
    metrics: dict[str, Any] = {"queries": len(records), "window": [cfg.window_start, cfg.window_end]}
    with tempfile.TemporaryDirectory(dir=ctx.artifacts, prefix=".mine-onnx-") as work:
        encoders = _miners_encoders(ctx, cfg, _miners(ctx, recipe, warmup), Path(work))
        for channel, miner in encoders.items():
            ranking, qids, exact = _rank(ctx, channel, miner, docs, queries, cfg.depth)
            floors = None
            if cfg.false_negative_ratio is not None:
                floors = {q: float(np.min(exact(i, [row[p] for p in positives[q]])))
                          for i, q in enumerate(qids) if positives[q]}
            mined[channel] = sample_window(ranking, positives, (cfg.window_start, cfg.window_end), cfg.per_channel,
                                           cfg.seed, channel, floors, cfg.false_negative_ratio)
            metrics[f"{channel}_positive_recall@{cfg.depth}"] = round(positive_recall(ranking, positives), 4)
            metrics[f"{channel}_encoder"] = miner.kind  # what encoded its queries: onnx (the twin) or torch
            metrics[f"{channel}_negatives_per_query"] = round(
                float(np.mean([len(v) for v in mined[channel].values()])) if mined[channel] else 0.0, 3)

    def records_of(channels: list[str]) -> list[NegativesRecord]:
        return [NegativesRecord(r.query_id, r.query, r.positives,
                                merge_negatives(*(mined[c][r.query_id] for c in channels))) for r in records]

    union = records_of(list(mined))
    if len(mined) == 2:
        overlap = [len(set(mined["dense"][q]) & set(mined["sparse"][q])) for q in queries]
        metrics["dense_sparse_overlap_per_query"] = round(float(np.mean(overlap)) if overlap else 0.0, 3)
    metrics["negatives_per_query"] = round(float(np.mean([len(r.negatives) for r in union])) if union else 0.0, 3)
    with stage_output(ctx, STAGE, sections=SECTIONS + ["retrieval"],
                      inputs={"warmup_model": warmup, "bm25_negatives": bm25_negatives}) as (out, manifest):
        write_negatives(out / NEGATIVES, union)
        for channel in mined:
            write_negatives(out / f"{channel}.jsonl", records_of([channel]))
        manifest.update(recipe=recipe.name, skipped=False, metrics=metrics)
    log.info("mine (%s): %s", recipe.name, metrics)
    return metrics
