"""Stage index: encode the train corpus with the final checkpoint into a retrieval bundle.

Reads the checkpoint of `index.source_stage` (auto: distill, else continual, else warmup: the first
whose artifacts/<stage>/model/ exists), exports its query and document encoders to ONNX, checks
their parity with torch on real queries and documents (a failure stops the stage: nothing is
written), encodes the corpus of data.train_dataset and writes artifacts/index/bundle/ (layout in
uniret.retrieval.bundle): ONNX encoders, tokenizer, faiss index, Lucene impact index, a copy of
the bm25 stage's index, doc ids and a manifest with the model config, index types and metrics.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import shutil
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import Any

from uniret.config.retrieval import IndexConfig, RetrievalConfig
from uniret.core.errors import StageFailed
from uniret.core.stage_files import BM25_INDEXES
from uniret.data.beir import BeirDataset
from uniret.evaluation.fusion_learning import learn_fusion
from uniret.export.onnx import export_encoders
from uniret.export.parity import RememberingEncoder, check_parity
from uniret.export.quantize import quantize_doc_encoder, quantize_query_encoder
from uniret.registry.integrity import write_checksums
from uniret.retrieval.bundle import BM25_DIR, FORMAT_VERSION, MANIFEST, ONNX_DIR, TOKENIZER_DIR
from uniret.retrieval.bundle_write import write_bm25_weights, write_index_structures
from uniret.retrieval.encoding import TorchTextEncoder
from uniret.retrieval.onnx_encoder import QUERY_FILE, OnnxEncoder
from uniret.retrieval.sharded import EncoderSpec, encode_corpus
from uniret.retrieval.sparse import vocab_tokens
from uniret.runtime import MANIFEST as STAGE_MANIFEST
from uniret.runtime import StageContext, read_manifest, stage_output
from uniret.stages.feedback import feedback_output
from uniret.utils.files import atomic_write_json, hash_path

log = logging.getLogger("uniret.stages.index")

STAGE = "index"
BUNDLE = "bundle"
MODEL_DIR = "model"
# "auto" takes the most trained checkpoint available
SOURCE_ORDER = ("distill", "continual", "warmup")


def find_checkpoint(ctx: StageContext, source: str) -> tuple[str, Path]:
    """(stage, checkpoint folder) to index, per `index.source_stage`."""
    candidates = SOURCE_ORDER if source == "auto" else (source,)
    for stage in candidates:
        path = ctx.stage_dir(stage) / MODEL_DIR
        if path.is_dir():
            return stage, path
    where = ", ".join(str(ctx.stage_dir(s) / MODEL_DIR) for s in candidates)
    raise FileNotFoundError(f"index: no checkpoint found (looked for {where}); run `uniret {candidates[-1]}` first")


def corpus_identity(dataset: BeirDataset) -> dict[str, str]:
    """What the bundle indexes: the dataset's name and its corpus file's sha256 (a corpus refresh
    compares it with today's validated corpus, uniret.stages.corpus_refresh)."""
    return {"dataset": dataset.name, "sha256": hash_path(dataset.corpus_path)}


def _parity_texts(dataset: BeirDataset, split: str, cfg: IndexConfig) -> tuple[list[str], list[str]]:
    """Real queries (the train split, else any) and the first documents of the corpus."""
    queries = dataset.split_queries(split) if split in dataset.splits() else dataset.queries()
    n_q, n_d = cfg.export.parity.queries, cfg.export.parity.docs
    return list(islice(queries.values(), n_q)), [d.contents for d in islice(dataset.iter_corpus(), n_d)]


def _model_info(ctx: StageContext, model, stage: str, model_dir: Path) -> dict[str, Any]:
    config = getattr(model, "model_config", None)
    trained_by = model_dir.parent  # the training stage's folder: its manifest names the recipe
    recipe = read_manifest(trained_by).get("recipe") if (trained_by / STAGE_MANIFEST).is_file() else None
    recipe_cfg = ctx.params.section("model").recipes.get(recipe) if recipe else None
    plans = ctx.params.section("training").recipes
    return {
        "source_stage": stage,
        "checkpoint": str(model_dir),
        "checkpoint_sha256": hash_path(model_dir),
        "class": type(model).__name__,
        "config": dataclasses.asdict(config) if config is not None else None,
        "recipe": recipe,
        # CLEAR lambda_test: serving's "clear" mode adds BM25 with the weight the model was trained for
        "bm25_weight": recipe_cfg.bm25_weight if recipe_cfg is not None else None,
        # the mode serving answers in by default and the gate judges (serve_mode in recipes/<recipe>.yaml)
        "serve_mode": plans[recipe].serve_mode if recipe in plans else None,
    }


def _cache_key(info: dict[str, Any], int8_docs: bool, batch_size: int) -> str | None:
    """The checkpoint's encoding-cache key (shared with the evaluate stage's sources), if it has a config;
    `batch_size`: the corpus pass's, which int8 document encodings depend on."""
    from uniret.retrieval.corpus_cache import checkpoint_key

    if info.get("config") is None:
        return None
    return checkpoint_key(info["config"], info["checkpoint_sha256"], batch_size if int8_docs else None)


def _corpus_encoding(ctx: StageContext, key: str | None, dataset: BeirDataset, docs: list, encode):
    """(encodings, seconds spent encoding) of the train corpus; seconds None when they came from the cache.

    The cache is keyed by the checkpoint and the corpus contents, so a rerun of the index stage for
    other retrieval or fusion settings does not encode again, and the evaluate stage, which scores
    this checkpoint on this corpus too, reads them instead of encoding.
    """
    from uniret.retrieval.corpus_cache import cached_corpus_encoding

    if key is None:
        start = time.perf_counter()
        return encode(), time.perf_counter() - start
    timing: dict[str, float] = {}

    def timed():
        start = time.perf_counter()
        out = encode()
        timing["seconds"] = time.perf_counter() - start
        return out

    root = ctx.artifacts / ctx.params.section("encoding").cache_dir
    encoded = cached_corpus_encoding(root, key, dataset.corpus_path, [d.id for d in docs], timed,
                                     label=f"index/{dataset.name}")
    return encoded, timing.get("seconds")


def _train_pairs(dataset: BeirDataset, others: list[BeirDataset], split: str, dev_qids: set[str], docs: list):
    """The train split's queries outside the dev carve with the rows (in `docs`) of their relevant
    documents: the static tower's fine-tuning data. A query whose text equals a held-out query (a
    dev or test query of any dataset: BEIR's SciFact has two train claims worded as test claims)
    is dropped, as the pseudo-queries drop it."""
    from uniret.data.pseudo_queries import held_out_queries, normalise
    from uniret.training.static_tower import TrainPairs

    row = {d.id: i for i, d in enumerate(docs)}
    queries = dataset.queries()
    held = held_out_queries([dataset, *others], dataset.name, split, dev_qids)
    pairs = TrainPairs(texts=[], positives=[])
    if split not in dataset.splits():
        return pairs
    for qid, judged in dataset.qrels(split).items():
        relevant = [row[d] for d, rel in judged.items() if rel > 0 and d in row]
        if qid in dev_qids or qid not in queries or not relevant or normalise(queries[qid]) in held:
            continue
        pairs.texts.append(queries[qid])
        pairs.positives.append(relevant)
    return pairs


def _with_clicks(pairs, clicks, docs: list):
    """The labelled pairs (weight 1 each) followed by the click examples (their weights)."""
    from uniret.training.static_tower import TrainPairs

    if not clicks.texts:
        return pairs
    row = {d.id: i for i, d in enumerate(docs)}
    return TrainPairs(texts=[*pairs.texts, *clicks.texts],
                      positives=[*pairs.positives, *[[row[d]] for d in clicks.docs]],
                      weights=[*(pairs.weights or [1.0] * len(pairs.texts)), *clicks.weights])


def _static_query(ctx: StageContext, cfg: IndexConfig, model, tokenizer, dataset: BeirDataset, docs: list,
                  bundle: Path, qlen: int, dlen: int, doc_vectors=None, model_key: str | None = None):
    """Build and write the bundle's static/ query tables: (their encoder, their record), or
    (None, None) when `index.static_query.enabled` is false. `doc_vectors`: the corpus's dense
    vectors (rows of `docs`), which the tower is fine-tuned against when so configured. `model_key`:
    the checkpoint's encoding-cache key; its token vectors (a pass over the whole vocabulary, ~10 s
    for MiniLM on 2 cores) are then cached, as its corpus encodings are, for a rerun with other settings."""
    from uniret.core.stage_files import DEV_QRELS
    from uniret.data.beir import read_qrels
    from uniret.data.pseudo_queries import PseudoQuerySpec, held_out_queries, pseudo_queries
    from uniret.feedback.examples import click_examples, logged_queries
    from uniret.retrieval.corpus_cache import cached_text_vectors
    from uniret.retrieval.static_query import STATIC_DIR, load_static_query, save_static_query
    from uniret.training.static_tower import TrainPairs, build_static_tables

    scfg = cfg.static_query
    if not scfg.enabled:
        return None, None
    data = ctx.params.section("data")
    dev_path = ctx.require("bm25") / DEV_QRELS
    dev_qids = set(read_qrels(dev_path)) if dev_path.is_file() else set()
    others = [ctx.dataset(n) for n in data.eval_datasets if n != dataset.name]
    spec = PseudoQuerySpec(scfg.train_queries, scfg.titles, scfg.sentences, scfg.other_corpus_sentences,
                           scfg.min_words, scfg.max_words, scfg.seed)
    texts, counts = pseudo_queries(dataset, others, data.train_split, dev_qids, spec)
    pairs = None
    if scfg.finetune_epochs:
        pairs = (_train_pairs(dataset, others, data.train_split, dev_qids, docs) if scfg.train_labels
                 else TrainPairs(texts=[], positives=[]))
    feedback = feedback_output(ctx)
    clicks = None
    if feedback is not None:
        held = held_out_queries([dataset, *others], dataset.name, data.train_split, dev_qids)
        if scfg.logged_queries:
            logged = logged_queries(feedback, held)
            texts += logged
            counts["logged_queries"] = len(logged)
        if pairs is not None and scfg.clicks != "none":
            clicks = click_examples(feedback, scfg.clicks, held, {d.id for d in docs}, scfg.clicks_weight,
                                    scfg.clicks_aggregate)
            pairs = _with_clicks(pairs, clicks, docs)
    vectors = teacher = None
    if model_key is not None:
        root = ctx.artifacts / ctx.params.section("encoding").cache_dir
        vectors = functools.partial(_cached_token_vectors, root, model_key, model, tokenizer, scfg.init_batch)
        # the distillation targets per text: a nightly's texts are mostly the last night's
        graph = bundle / ONNX_DIR / QUERY_FILE if cfg.corpus_encoder == "onnx" else None
        teacher = functools.partial(cached_text_vectors, root, model_key, f"teacher vectors (query length {qlen})",
                                    compute=functools.partial(_teacher_vectors, model, tokenizer, qlen, graph))
    tables = build_static_tables(model, tokenizer, [d.contents for d in docs], texts, qlen, dlen, scfg, counts,
                                 pairs, doc_vectors, vectors, teacher)
    tables.meta.update(train_labels=scfg.train_labels and pairs is not None,
                       clicks={"kind": scfg.clicks, **clicks.summary()} if clicks is not None else None)
    save_static_query(bundle / STATIC_DIR, tables.tower, tables.token_weights, tables.meta)
    # read back as serving reads it, so fusion weights are learned on the stored (float16) tower
    return load_static_query(bundle / STATIC_DIR, tokenizer, qlen), tables.meta


def _teacher_vectors(model, tokenizer, qlen: int, query_graph: Path | None, texts) -> Any:
    """The static tower's distillation targets of `texts`: the trained query encoder's dense vectors,
    through the bundle's query graph cut to its dense output when the corpus passes run ONNX (the same
    vectors, 1.7-1.8x faster on 2 CPU cores: E105), else the torch model (on the GPU, if any)."""
    from uniret.export.subgraph import DenseGraph, dense_subgraph
    from uniret.training.static_tower import teacher_vectors

    if query_graph is None:
        return teacher_vectors(model, tokenizer, texts, qlen)
    # beside the bundle, inside the stage's temporary output: gone before the stage publishes
    with tempfile.TemporaryDirectory(dir=query_graph.parents[2], prefix=".teacher-") as work:
        graph = DenseGraph(dense_subgraph(query_graph, Path(work) / "dense.onnx"))
        return teacher_vectors(model, tokenizer, texts, qlen, dense=graph)


def _cached_token_vectors(root: Path, model_key: str, model, tokenizer, batch: int, ids) -> Any:
    """The static tower's token vectors of `ids` (None: the whole vocabulary) from the encoding cache,
    keyed by the model and the tokens encoded (init_vocab seen: the corpus's and the texts')."""
    from uniret.retrieval.corpus_cache import cached_model_array
    from uniret.training.static_tower import token_vectors

    name = f"token vectors (batch {batch})"
    if ids is not None:
        name += f", tokens {hashlib.sha256(ids.tobytes()).hexdigest()[:16]}"
    return cached_model_array(root, model_key, name, lambda: token_vectors(model, tokenizer, batch, ids))


def run(ctx: StageContext) -> dict[str, Any]:
    """Build artifacts/index/bundle/; returns the bundle's metrics."""
    from uniret.models.factory import load_model

    cfg: IndexConfig = ctx.params.section("index")
    rcfg: RetrievalConfig = ctx.params.section("retrieval")
    data = ctx.params.section("data")
    stage, model_dir = find_checkpoint(ctx, cfg.source_stage)
    dataset = ctx.dataset(data.train_dataset)
    bm25_index = ctx.require("bm25") / BM25_INDEXES / data.train_dataset
    if not bm25_index.is_dir():
        raise FileNotFoundError(f"{bm25_index}: BM25 index of {data.train_dataset!r} missing; rerun `uniret bm25`")
    model, tokenizer = load_model(model_dir)
    mcfg = model.model_config
    qlen, dlen = mcfg.query_max_length, mcfg.doc_max_length
    log.info("index: %s checkpoint %s, corpus %s", stage, model_dir, dataset.name)

    inputs = {"model": model_dir, "corpus": dataset.corpus_path, "bm25_index": bm25_index}
    with stage_output(ctx, STAGE, sections=["data", "index", "retrieval", "bm25", "model", "encoding"], inputs=inputs) as (tmp, manifest):
        bundle = tmp / BUNDLE
        outputs = export_encoders(model, tokenizer, bundle / ONNX_DIR, cfg.export, qlen, dlen)
        tokenizer.save_pretrained(str(bundle / TOKENIZER_DIR))
        batch = ctx.params.section("encoding").batch_size
        torch_enc = TorchTextEncoder(model, tokenizer, batch, qlen, dlen)
        onnx_enc = OnnxEncoder(bundle / ONNX_DIR, tokenizer, batch, qlen, dlen)
        parity_texts = _parity_texts(dataset, data.train_split, cfg)
        reference = RememberingEncoder(onnx_enc)  # the int8 checks reuse its parity encodings
        parity = check_parity(torch_enc, reference, *parity_texts, cfg.export.parity)
        int8 = quantize_query_encoder(bundle / ONNX_DIR, reference, *parity_texts, cfg.export.quantize,
                                      cfg.export.parity)
        int8_docs = quantize_doc_encoder(bundle / ONNX_DIR, reference, *parity_texts, cfg.export.quantize_docs)
        # the checks' sessions and arenas (the fp32 document graph's, when int8 takes over) go before
        # the corpus passes: held to the end they were this stage's peak RSS (E27)
        del reference
        if int8_docs["used"]:  # corpus passes (here, fusion tuning, evaluate) encode with doc.int8.onnx
            onnx_enc = OnnxEncoder(bundle / ONNX_DIR, tokenizer, batch, qlen, dlen, query_file=onnx_enc.query_file)

        docs = list(dataset.iter_corpus())
        if not docs:
            raise StageFailed(f"index: corpus of {dataset.name!r} is empty")
        if cfg.corpus_encoder == "torch":
            from uniret.models.encode import default_device

            model.to(default_device())  # export and parity ran on the CPU; encode on the GPU if any
            torch_enc = TorchTextEncoder(model, tokenizer, batch, qlen, dlen)
        encoder = onnx_enc if cfg.corpus_encoder == "onnx" else torch_enc
        dist = ctx.params.section("distributed")  # encode_shards > 1: parallel worker processes
        spec = EncoderSpec(cfg.corpus_encoder, str(bundle / ONNX_DIR if cfg.corpus_encoder == "onnx" else model_dir),
                           batch, qlen, dlen, tokenizer=str(bundle / TOKENIZER_DIR))
        info = _model_info(ctx, model, stage, model_dir)
        # the int8 graph's key only when it made them (a torch corpus pass makes the checkpoint's)
        cache_key = _cache_key(info, int8_docs["used"] and cfg.corpus_encoder == "onnx", batch)
        encoded, encode_seconds = _corpus_encoding(
            ctx, cache_key, dataset, docs,
            lambda: encode_corpus(encoder, spec, [d.contents for d in docs], [d.id for d in docs],
                                  dist.encode_shards, dist.encode_threads, work_dir=tmp))
        metrics: dict[str, Any] = write_index_structures(
            bundle, [d.id for d in docs], encoded, vocab_tokens(tokenizer), rcfg
        )
        static, static_meta = (_static_query(ctx, cfg, model, tokenizer, dataset, docs, bundle, qlen, dlen,
                                             encoded.dense, _cache_key(info, False, batch))
                               if encoded.dense is not None else (None, None))
        fusion = learn_fusion(ctx, cfg, rcfg, dataset, [d.id for d in docs], encoded, onnx_enc, cache_key, static)
        shutil.copytree(bm25_index, bundle / BM25_DIR)
        metrics.update(write_bm25_weights(bundle, [d.id for d in docs], ctx.params.section("bm25")))
        metrics.update(
            corpus_encoder=cfg.corpus_encoder,
            encode_shards=dist.encode_shards,
            # None: this checkpoint's encodings of the corpus came from the cache (a rerun for other settings)
            corpus_encode_docs_per_s=None if encode_seconds is None else round(len(docs) / max(encode_seconds, 1e-9), 2),
            bundle_bytes=sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file()),
        )
        atomic_write_json(
            bundle / MANIFEST,
            {
                "format": FORMAT_VERSION,
                "train_dataset": dataset.name,
                "corpus": corpus_identity(dataset),
                "model": info,
                "query_max_length": qlen,
                "doc_max_length": dlen,
                "index_types": {
                    "dense": f"faiss-{rcfg.dense.type}" if encoded.dense is not None else None,
                    "lexical": "lucene-impact" if encoded.sparse is not None else None,
                    "bm25": "lucene-bm25",
                },
                "onnx": {"outputs": outputs, "opset": cfg.export.opset, "dynamo": cfg.export.dynamo,
                         "query_int8": int8, "doc_int8": int8_docs},
                "params": {
                    "retrieval": dataclasses.asdict(rcfg),
                    "bm25": dataclasses.asdict(ctx.params.section("bm25")),
                    "index": dataclasses.asdict(cfg),
                    "encoding": dataclasses.asdict(ctx.params.section("encoding")),
                },
                "metrics": metrics,
                "parity": parity,
                "fusion": fusion,
                "static_query": static_meta,
            },
        )
        # every file's sha256, as at promotion: a copy of this bundle damaged later is refused by
        # whatever reads it to measure or publish it (evaluate, bench, export), before any work
        write_checksums(bundle)
        manifest["metrics"] = {**metrics, "parity": parity, "query_int8_used": int8["used"],
                               "doc_int8_used": int8_docs["used"], "fusion": fusion, "static_query": static_meta}
    log.info("index: bundle of %d docs -> %s", metrics["num_docs"], ctx.stage_dir(STAGE) / BUNDLE)
    return manifest["metrics"]
