"""The steps of the GPU check (uniret.ops.gpu_check): each returns the figures it measured.

The training stages are the real stage functions over a StageContext in a scratch folder. What
they read from stages the check cannot run without the JVM or great-expectations is seeded: the
validated dataset is a slice written by uniret.data.slicing, and the BM25 negatives are random
documents of that slice (no Lucene on the GPU machine: BM25 itself is not part of the check).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib
import json
import logging
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from uniret.ops.gpu_report import Report, run_step

log = logging.getLogger("uniret.gpu_check")

STEP_NAMES = ("data", "training", "resume", "encode", "static", "query", "index")
TRAINING_STAGES = ("warmup", "reranker", "continual", "distill")
SEEDED = "seeded by gpu-check: not a pipeline output"


class _Interrupted(Exception):
    """The simulated crash of the resume check."""


def check_params(path: Path | None, profile: str, steps: int, dataset: str | None = None):
    """Params of `path` under `profile`, every training stage cut to `steps` optimizer steps (a
    checkpoint halfway), the reranker teacher kept whatever its accuracy after so few steps, and
    `dataset` (when given) the training and only evaluation dataset."""
    from uniret.config import load_params
    from uniret.config.loader import merge_overrides
    from uniret.config.params import Params

    params = load_params(path or Path(__file__).resolve().parents[3] / "params.yaml", profile)
    recipe = params.section("model").recipe
    train = {"max_steps": steps, "warmup_steps": 1, "checkpoint_every": max(1, steps // 2), "log_every": 1,
             "progress": False}
    stages: dict[str, Any] = {stage: {"train": dict(train)} for stage in TRAINING_STAGES}
    stages["distill"]["min_teacher_top1"] = None
    # a recipe's own `train` block is applied after the section's: it gets the same cut
    stages["recipes"] = {recipe: {"train": {stage: dict(train) for stage in TRAINING_STAGES}}}
    raw = copy.deepcopy(params.raw)
    raw["training"] = merge_overrides(raw.get("training") or {}, {"profiles": {profile: stages}})
    if dataset:
        raw["data"] = {**(raw.get("data") or {}), "train_dataset": dataset, "eval_datasets": [dataset]}
    return Params(raw=raw, profile=profile, path=params.path)


@dataclasses.dataclass
class CheckRun:
    """What the steps share: options, the scratch StageContext, the report and what earlier steps made."""

    args: argparse.Namespace
    ctx: Any  # uniret.runtime.StageContext
    report: Report
    device: Any  # torch.device
    corpus: dict[str, Any] = dataclasses.field(default_factory=dict)  # docids, dense (fp32 pass)
    query_dense: np.ndarray | None = None

    @property
    def dataset(self):
        from uniret.data.beir import BeirDataset

        return BeirDataset(Path(self.args.data) / self.args.dataset, self.args.dataset)

    def recipe(self):
        from uniret.stages.recipe_stage import active_recipe

        return active_recipe(self.ctx)

    def final_model(self):
        """The last trained stage's model on the device, else a fresh one of the recipe (fallback)."""
        from uniret.models.factory import build_model, load_model
        from uniret.stages.recipe_stage import MODEL_DIR

        for stage in ("distill", "continual", "warmup"):
            folder = self.ctx.stage_dir(stage) / MODEL_DIR
            if folder.is_dir():
                model, _ = load_model(folder, device=self.device)
                return model, stage
        model = build_model(self.recipe().model.model).to(self.device).eval()
        return model, "untrained"

    def eval_queries(self) -> list[str]:
        ds = self.dataset
        texts = list(ds.queries().values())
        return (texts * (1 + self.args.queries // max(len(texts), 1)))[: self.args.queries]


def _write_seed_manifest(folder: Path, stage: str) -> None:
    from uniret.utils.files import atomic_write_json
    from uniret.utils.owned import MANIFEST

    atomic_write_json(folder / MANIFEST, {"stage": stage, "note": SEEDED})


def step_data(run: CheckRun) -> dict[str, Any]:
    """The training slice as the validate stage's output, and random negatives as the bm25 stage's."""
    from uniret.config.sections import SliceConfig
    from uniret.data.negatives import sample_negatives, write_negatives
    from uniret.data.slicing import write_slice
    from uniret.runtime.context import VALIDATED_DATA

    data = run.ctx.params.section("data")
    bm25 = run.ctx.params.section("bm25")
    validate = run.ctx.stage_dir("validate")
    sliced = write_slice(run.dataset, validate / VALIDATED_DATA / run.args.dataset,
                         SliceConfig(max_queries=run.args.train_queries, max_docs=run.args.train_docs, seed=13))
    _write_seed_manifest(validate, "validate")
    docids = [d.id for d in sliced.iter_corpus()]
    qrels = sliced.qrels(data.train_split)
    rng = random.Random(bm25.seed)
    ranking = {q: {d: rng.random() for d in rng.sample(docids, min(len(docids), bm25.negatives_depth))} for q in qrels}
    records = sample_negatives(ranking, qrels, sliced.queries(), bm25.negatives_depth, bm25.negatives_per_query, bm25.seed)
    out = run.ctx.stage_dir("bm25")
    out.mkdir(parents=True, exist_ok=True)
    write_negatives(out / "negatives.jsonl", records)
    _write_seed_manifest(out, "bm25")
    run.report.fallback("data", "BM25 negatives (Lucene via pyserini)", "random documents of the slice",
                        "the check runs no JVM: BM25 is CPU work outside the CUDA path")
    return {"dataset": run.args.dataset, "docs": len(docids), "train_queries": len(records)}


def _train_summary(stage_dir: Path) -> dict[str, Any]:
    path = stage_dir / "metrics" / "train_summary.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def stage_runner(run: CheckRun, stage: str):
    """The step of one recipe stage: the real stage function, then its manifest's figures."""
    from uniret.stages import run_stage
    from uniret.utils.owned import MANIFEST

    def step() -> dict[str, Any]:
        run_stage(stage, run.ctx)
        out = run.ctx.stage_dir(stage)
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        figures = dict(manifest.get("metrics") or {})
        summary = _train_summary(out)
        figures.update({k: v for k, v in (summary.get("step_seconds") or {}).items()})
        if stage in TRAINING_STAGES and run.device.type == "cuda":
            device = str(figures.get("device", ""))
            if "bfloat16" not in device and "float16" not in device:
                run.report.fallback(f"stage:{stage}", "CUDA autocast (AMP)", device, "the stage trained without AMP")
        return figures

    return step


def step_resume(run: CheckRun) -> dict[str, Any]:
    """The warm-up objective trained twice from the same weights: once straight through, once
    crashed right after its first checkpoint and resumed; reports the weights' largest difference."""
    import torch

    from uniret.losses.compose import build_composite
    from uniret.models.factory import build_model
    from uniret.stages.recipe_stage import corpus_texts, negatives_file, read_records
    from uniret.training import train
    from uniret.training.batches import batches_for
    from uniret.training.examples import GroupCollator, build_examples
    from uniret.training.objectives import make_compute_loss

    recipe = run.recipe()
    cfg = recipe.stage_config("warmup")
    tcfg = dataclasses.replace(cfg.train, device=run.device.type)
    corpus = corpus_texts(run.ctx)
    examples = build_examples(read_records(negatives_file(run.ctx, "bm25")), cfg.group_size, list(corpus),
                              tcfg.seed)
    torch.manual_seed(tcfg.seed)
    start = build_model(recipe.model.model).train()
    mcfg = start.model_config
    loss = make_compute_loss(build_composite(run.ctx.params.section("losses").terms(recipe.name, "warmup")))
    crash_at = tcfg.checkpoint_every + 1

    def crashing(model, batch, step):
        if step == crash_at:
            raise _Interrupted(step)
        return loss(model, batch, step)

    def data():
        collate = GroupCollator(start.tokenizer, corpus, mcfg.query_max_length, cfg.doc_max_length or mcfg.doc_max_length)
        return batches_for(examples, collate, tcfg)

    work = run.ctx.artifacts / ".gpu-check-resume"
    straight = copy.deepcopy(start)
    first = train(straight, data(), loss, tcfg, work / "straight")
    resumed = copy.deepcopy(start)
    try:
        train(resumed, data(), crashing, tcfg, work / "resumed")
        raise RuntimeError(f"the simulated crash at step {crash_at} did not happen")
    except _Interrupted:
        pass
    second = train(resumed, data(), loss, tcfg, work / "resumed", resume=True)
    summary = json.loads(second.summary.read_text(encoding="utf-8"))
    diff = max(float((a.detach().float() - b.detach().float()).abs().max())
               for a, b in zip(straight.state_dict().values(), resumed.state_dict().values(), strict=True)
               if a.is_floating_point())
    shutil.rmtree(work, ignore_errors=True)
    return {"steps": tcfg.max_steps, "crashed_at_step": crash_at, "resumed_from_step": summary.get("resumed_from_step"),
            "device": summary.get("device"), "final_loss_straight": first.logs.get("loss"),
            "final_loss_resumed": second.logs.get("loss"), "max_abs_weight_diff": diff, "bit_exact": diff == 0.0}


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 2) if seconds > 0 else float("inf")


def step_encode(run: CheckRun) -> dict[str, Any]:
    """The dataset's corpus through the final model: fp32 (as the index stage's torch pass) and AMP."""
    from uniret.retrieval.encoding import TorchTextEncoder

    model, source = run.final_model()
    cfg = model.model_config
    docs = list(run.dataset.iter_corpus())[: run.args.encode_docs]
    texts = [d.contents for d in docs]
    batch = run.ctx.params.section("encoding").batch_size
    out: dict[str, Any] = {"model": source, "docs": len(texts), "batch_size": batch, "doc_max_length": cfg.doc_max_length}
    for amp in ("off", "auto"):
        encoder = TorchTextEncoder(model, model.tokenizer, batch, cfg.query_max_length, cfg.doc_max_length, amp=amp)
        if amp == "auto" and encoder.autocast_dtype is None:
            out["amp_pass"] = "skipped: no autocast dtype on this device"
            break
        start = time.perf_counter()
        encoded = encoder.encode(texts, is_query=False)
        seconds = time.perf_counter() - start
        label = "fp32" if amp == "off" else str(encoder.autocast_dtype).removeprefix("torch.")
        out[f"{label}_seconds"] = round(seconds, 3)
        out[f"{label}_docs_per_s"] = _rate(len(texts), seconds)
        if amp == "off":
            out["docs_per_s"] = out["fp32_docs_per_s"]
            run.corpus = {"docids": [d.id for d in docs], "dense": encoded.dense}
            if encoded.sparse is not None:
                out["active_terms_per_doc"] = round(float(np.diff(encoded.sparse.indptr).mean()), 1)
    return out


def step_static(run: CheckRun) -> dict[str, Any]:
    """The static query tables (index stage, `static_query`) built from the final model on the device."""
    from uniret.data.pseudo_queries import PseudoQuerySpec, pseudo_queries
    from uniret.training.static_tower import build_static_tables

    model, source = run.final_model()
    cfg = model.model_config
    scfg = dataclasses.replace(run.ctx.params.section("index").static_query, sentences=run.args.static_texts,
                               other_corpus_sentences=0)
    dataset = run.ctx.dataset(run.args.dataset)
    spec = PseudoQuerySpec(scfg.train_queries, scfg.titles, scfg.sentences, scfg.other_corpus_sentences,
                           scfg.min_words, scfg.max_words, scfg.seed)
    texts, counts = pseudo_queries(dataset, [], run.ctx.params.section("data").train_split, set(), spec)
    docs = [d.contents for d in dataset.iter_corpus()]
    tables = build_static_tables(model, model.tokenizer, docs, texts, cfg.query_max_length, cfg.doc_max_length, scfg,
                                 counts)
    if not tables.meta["finite"]:
        raise ValueError("the static query tables hold non-finite values")
    return {"model": source, "texts": tables.meta["texts"], "vocab": tables.meta["vocab"],
            "loss_by_epoch": tables.meta["loss_by_epoch"], **{k: v for k, v in tables.meta["seconds"].items()},
            "token_vectors_on": str(run.device), "distill_on": "cpu (uniret.training.static_tower trains the table there)"}


def _time_one_by_one(encode, queries: list[str]) -> dict[str, float]:
    """Batch-1 encodings of every query: queries/s and p50/p95 milliseconds (first two are warm-up)."""
    for text in queries[:2]:
        encode([text])
    times = []
    for text in queries:
        start = time.perf_counter()
        encode([text])
        times.append(time.perf_counter() - start)
    ms = sorted(t * 1000 for t in times)
    return {"queries_per_s": _rate(len(times), sum(times)), "p50_ms": round(statistics.median(ms), 3),
            "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 3)}


def step_query(run: CheckRun) -> dict[str, Any]:
    """The served modes' query encoders at batch 1: torch on the device, ONNX Runtime (its CUDA
    provider where installed), and the static tables of hybrid_fast (table look-ups on the CPU)."""
    import onnxruntime as ort

    from uniret.data.token_stats import idf_weights
    from uniret.export.onnx import export_encoders
    from uniret.retrieval.encoding import TorchTextEncoder
    from uniret.retrieval.onnx_encoder import OnnxEncoder
    from uniret.retrieval.static_query import StaticQueryEncoder

    model, source = run.final_model()
    cfg = model.model_config
    qlen, dlen = cfg.query_max_length, cfg.doc_max_length
    queries = run.eval_queries()
    out: dict[str, Any] = {"model": source, "queries": len(queries)}
    torch_enc = TorchTextEncoder(model, model.tokenizer, 1, qlen, dlen)
    out["torch"] = _time_one_by_one(lambda b: torch_enc.encode(b, is_query=True), queries)
    out["queries_per_s"] = out["torch"]["queries_per_s"]
    batched = TorchTextEncoder(model, model.tokenizer, run.ctx.params.section("retrieval").query_batch_size, qlen, dlen)
    start = time.perf_counter()
    run.query_dense = batched.encode(queries, is_query=True).dense
    out["torch_batched_queries_per_s"] = _rate(len(queries), time.perf_counter() - start)

    onnx_dir = run.ctx.artifacts / "gpu-check-onnx"
    start = time.perf_counter()
    export_encoders(model.to("cpu"), model.tokenizer, onnx_dir, run.ctx.params.section("index").export, qlen, dlen)
    model.to(run.device)
    out["onnx_export_seconds"] = round(time.perf_counter() - start, 3)
    onnx = OnnxEncoder(onnx_dir, model.tokenizer, 1, qlen, dlen)
    providers = onnx.session(True).get_providers()
    out["onnx_providers"] = providers
    if "CUDAExecutionProvider" not in providers:
        why = ("onnxruntime here has no CUDAExecutionProvider (available: "
               f"{', '.join(ort.get_available_providers())}; the onnxruntime-gpu build has it)")
        run.report.fallback("query", "ONNX Runtime on CUDA (CUDAExecutionProvider)", "ONNX Runtime on the CPU", why)
    out["onnx"] = _time_one_by_one(lambda b: onnx.encode(b, is_query=True), queries)

    docs = [d.contents for d in run.dataset.iter_corpus()][: run.args.encode_docs]
    weights = idf_weights(model.tokenizer, docs, dlen)
    dim = run.query_dense.shape[1] if run.query_dense is not None else 384
    # a random tower of the model's width: the look-ups cost the same as the trained tables' (static step)
    tower = np.random.default_rng(0).standard_normal((len(weights), dim)).astype(np.float32)
    static = StaticQueryEncoder(model.tokenizer, tower, weights, qlen)
    out["static"] = _time_one_by_one(lambda b: static.encode(b, is_query=True), queries)
    return out


def step_index(run: CheckRun) -> dict[str, Any]:
    """The corpus's dense vectors in a faiss Flat index, searched on the GPU when faiss has one."""
    if run.corpus.get("dense") is None:
        return {"skipped": "no dense corpus vectors: the encode step did not run or the model has no dense head"}
    queries = run.query_dense
    if queries is None:  # the query step did not run: search with documents as queries
        queries = run.corpus["dense"][: run.args.queries]
    return dense_index_figures(run.report, run.corpus["dense"], queries, k=min(100, len(run.corpus["dense"])))


def dense_index_figures(report: Report, docs: np.ndarray, queries: np.ndarray, k: int) -> dict[str, Any]:
    """Build, move (uniret.retrieval.dense.to_search_device) and search a Flat index; its top-k
    checked against exact numpy inner products. Fallbacks: faiss absent (skipped), CPU-only faiss."""
    try:
        from uniret.retrieval.dense import build_faiss_index, to_search_device
        from uniret.retrieval.faiss_loader import faiss
    except ImportError as exc:
        report.fallback("index", "faiss's GPU build", "no dense index", f"faiss is not installed ({exc})")
        return {"skipped": f"faiss is not installed ({exc}); install faiss-gpu-cu12 or faiss-cpu from the kit"}
    from uniret.config.retrieval import DenseIndexConfig

    cfg = DenseIndexConfig(type="flat", use_gpu=True)
    start = time.perf_counter()
    cpu_index = build_faiss_index(docs, cfg)
    build_s = time.perf_counter() - start
    index = to_search_device(cpu_index, cfg)
    gpus = faiss.get_num_gpus()
    if index is cpu_index:
        report.fallback("index", "faiss's GPU index (index_cpu_to_all_gpus)", "the CPU index",
                        "this faiss build sees no GPU (faiss-cpu, or a GPU build without a device)")
    q = np.ascontiguousarray(queries, dtype=np.float32)
    index.search(q[:2], k)  # warm-up: GPU kernels, OpenMP threads
    start = time.perf_counter()
    _, found = index.search(q, k)
    search_s = time.perf_counter() - start
    exact = np.argsort(-(q @ np.asarray(docs, dtype=np.float32).T), axis=1)[:, :10]
    overlap = float(np.mean([len(set(a[:10]) & set(b)) / 10 for a, b in zip(found, exact, strict=True)]))
    return {"index": "flat", "on": "gpu" if index is not cpu_index else "cpu", "faiss_gpus": int(gpus),
            "docs": int(docs.shape[0]), "queries": int(q.shape[0]), "k": k, "build_seconds": round(build_s, 4),
            "queries_per_s": _rate(len(q), search_s), "top10_overlap_with_exact": round(overlap, 4)}


def kit_settings() -> dict[str, Any]:
    """Where the backbones came from: the kit ($UNIRET_BACKBONES, with its kit.json) or the packages."""
    import os

    from uniret.models.backbones import BACKBONES_ENV

    folder = os.environ.get(BACKBONES_ENV)
    if not folder:
        return {"backbones": "installed packages"}
    kit = Path(folder).parent / "kit.json"
    found = json.loads(kit.read_text(encoding="utf-8")) if kit.is_file() else {}
    return {"backbones": folder, "backbone_weights": found.get("weights", "unknown")}


def _importable(module: str) -> bool:
    # imported, not find_spec'd: the dry run's stand-in for an absent package refuses at import
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def run_check(args: argparse.Namespace, device: dict[str, Any], versions: dict[str, str], command: str) -> Report:
    """Every selected step, in order, into one Report."""
    import torch

    from uniret.runtime import StageContext

    params = check_params(Path(args.params) if args.params else None, args.profile, args.train_steps,
                          args.dataset)
    selected = args.steps.split(",")
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="uniret-gpu-check-"))
    ctx = StageContext(params=params, data_root=Path(args.data).resolve(), artifacts=(work / "artifacts").resolve())
    recipe = params.section("model").recipe
    step_timeout, budget = getattr(args, "step_timeout", 0) or 0, getattr(args, "budget", 0) or 0
    settings = {"profile": args.profile, "recipe": recipe, "dataset": args.dataset, "train_steps": args.train_steps,
                "train_queries": args.train_queries, "train_docs": args.train_docs, "encode_docs": args.encode_docs,
                "queries": args.queries, "steps": args.steps, "step_timeout_s": step_timeout or None,
                "budget_s": budget or None, **kit_settings()}
    report = Report(device=device, versions=versions, settings=settings, command=command,
                    out_dir=Path(args.out) if getattr(args, "out", None) else None)
    run = CheckRun(args, ctx, report, torch.device("cuda" if device["type"] == "cuda" else "cpu"))
    if not _importable("faiss") and "training" in selected:
        report.fallback("stage:mine", "faiss exact search (IndexFlatIP)", "numpy exact search (matrix product, top-k)",
                        "faiss is not installed (the GPU machine has none; its wheel does not fit the kit)")
    deadline = time.monotonic() + budget if budget else None

    def step(name: str, fn) -> None:
        left = deadline - time.monotonic() if deadline else None
        if left is not None and left < 1:
            run_step(report, name, lambda: {"skipped": f"the check's {budget:g} s budget is spent"})
            return
        limits = [t for t in (step_timeout, left) if t]
        run_step(report, name, fn, timeout_s=min(limits) if limits else None)

    try:
        if "data" in selected:
            step("data", lambda: step_data(run))
        if "training" in selected:
            for stage in run.recipe().plan.stages:
                step(f"stage:{stage}", stage_runner(run, stage))
        table = {"resume": step_resume, "encode": step_encode, "static": step_static, "query": step_query,
                 "index": step_index}
        for name, fn in table.items():
            if name in selected:
                step(name, lambda fn=fn: fn(run))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return report
