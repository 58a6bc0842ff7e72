"""Corpus refresh: on a night that promotes no new model, today's corpus indexed with production's own
model, checked, and promoted, so served documents are never older than a night (issue 55).

`uniret nightly` calls `refresh_corpus` when the gate blocked the candidate, when a rollback rejected
the candidate's content, and (params nightly.refresh_corpus: blocked_or_paused, the default) while
`uniret registry pause` holds: a pause freezes models, the refreshed bundle carries production's.

1. Nothing is done without a production bundle, when production indexes another dataset than
   data.train_dataset, or when it already indexes today's validated corpus (the corpus sha256 its
   manifest records; a bundle built before that was recorded: its doc ids against today's).
2. Refused when a rollback rejected a bundle that carries production's model (its checkpoint hash,
   else its ONNX graphs): the refresh would bring that model's answers back on other documents.
   `uniret registry lift` allows it again.
3. artifacts/corpus_refresh/bundle: production's ONNX encoders, tokenizer, static query tables and
   learned fusion weights as they are (no training, no export), today's corpus encoded by its
   document encoder (the encoding cache evaluate and the gate share), fresh faiss and Lucene impact
   indexes, the bm25 stage's index of today's corpus, checksums.
4. Checks, the gate's own rules where they apply to an unchanged model: the checksums read back as
   promotion reads them; the floors (gate.min_score, min_score_per_dataset) of production's served
   mode on data.eval_datasets, scored as the evaluate stage scores a candidate; the sparsity bounds;
   latency beside production's bundle as the bench stage times it (gate.max_latency_p50/p95_vs_production,
   bench.stage.production_rounds; skipped when both bounds are off, as the tiny profile has them).
   Not re-checked: the candidate-vs-production regression rules and BM25 margin (the model is
   production's own) and the absolute p95 budget (the vs-production ratios hold on a noisy machine).
5. Promoted under the registry lock like any bundle (a rejection of its content still refuses it;
   while paused too when so configured) with the reason "corpus refresh of <production version>"
   in the pointer and in the bundle's lineage (`refresh_of`).

Production's encodings are not reused per document: its bundle keeps only the quantized top-N
impacts, not the encoder's weights, so every document is encoded again (a second pass over the same
corpus comes from the encoding cache).
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uniret.config.paths import params_dir
from uniret.core.stage_files import BM25_INDEXES
from uniret.data.beir import BeirDataset
from uniret.evaluation.outputs import PER_QUERY_DIR
from uniret.registry.basis import evaluation_basis
from uniret.registry.bundles import EVALUATION_DIR, read_manifest
from uniret.registry.checkpoints import CHECKPOINT_DIR
from uniret.registry.checks import Check
from uniret.registry.configured import registry_config, registry_root, serving_from
from uniret.registry.control import PromotionHeld, Rejection, read_control
from uniret.registry.gate import (
    production_latency_checks,
    quality_checks,
    resolve_gate_config,
    sparsity_checks,
)
from uniret.registry.integrity import SUMS, IntegrityError, verified_bundle, verify_bundle, write_checksums
from uniret.registry.layout import BUNDLES
from uniret.registry.lineage import data_version, git_commit
from uniret.registry.pointer import read_pointer
from uniret.registry.promotion import promote
from uniret.retrieval.bundle import (
    BM25_DIR,
    BM25_TERMS_FILE,
    BM25_WEIGHTS_FILE,
    DENSE_FILE,
    DENSE_VECTORS_FILE,
    DOCIDS_FILE,
    IMPACT_DIR,
    IMPACTS_FILE,
    MANIFEST,
    ONNX_DIR,
    TOKENIZER_DIR,
)
from uniret.runtime import VALIDATED_DATA, StageContext, stage_output
from uniret.stages.index import corpus_identity
from uniret.utils.files import atomic_write_json, hash_path

log = logging.getLogger("uniret.stages.corpus_refresh")

STAGE = "corpus_refresh"  # artifacts/corpus_refresh: the bundle, its checks and what was promoted
BUNDLE = "bundle"
RESULT_JSON = "refresh.json"
# files the refresh rebuilds from today's corpus; every other file of production's bundle is its model
REBUILT = frozenset({DENSE_FILE, DENSE_VECTORS_FILE, IMPACT_DIR, IMPACTS_FILE, BM25_DIR, BM25_WEIGHTS_FILE, BM25_TERMS_FILE, DOCIDS_FILE})
# what publishing added to production's bundle (manifest fields, checksums, attachments): not the model
# files (the checkpoint is attached again when the refresh is published, beside the bundle's content)
PUBLISHED = frozenset({MANIFEST, SUMS, EVALUATION_DIR, CHECKPOINT_DIR})
REGISTRY_FIELDS = ("version", "published_at", "bundle_hash", "evaluation", "gate", "lineage")


@dataclass
class RefreshResult:
    """What a corpus refresh did: status promoted | unchanged | skipped | refused | blocked."""

    status: str
    summary: str  # one line for the nightly's summary and nightly.json
    production: str | None = None  # the version whose model was (or would be) refreshed
    version: str | None = None  # the refreshed bundle now production (status promoted)
    added: int = 0  # documents in today's corpus and not in production's bundle...
    removed: int = 0  # ...and the other way round
    checks: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def reason_text(version: str) -> str:
    """The registry reason of a refreshed bundle (pointer and lineage)."""
    return f"corpus refresh of {version}"


def model_identity(manifest: dict[str, Any], bundle: Path) -> str:
    """What identifies a bundle's model: its checkpoint's sha256 (the index stage records it, a refresh
    keeps it), else the hash of its ONNX graphs."""
    checkpoint = (manifest.get("model") or {}).get("checkpoint_sha256")
    return f"checkpoint:{checkpoint}" if checkpoint else f"onnx:{hash_path(bundle / ONNX_DIR)}"


def rejected_model(root: Path, manifest: dict[str, Any], bundle: Path) -> Rejection | None:
    """A rollback's rejection of a bundle that carries the model of `bundle` (None: none). A rejected
    bundle pruned from the registry can only be matched by content (promotion does that)."""
    rejected = read_control(root).rejected
    if not rejected:
        return None
    ours = model_identity(manifest, bundle)
    for rejection in rejected.values():
        folder = root / BUNDLES / rejection.version
        if folder.is_dir() and model_identity(read_manifest(folder), folder) == ours:
            return rejection
    return None


def _skip(status: str, summary: str, production: str | None = None) -> RefreshResult:
    log.info("corpus refresh: %s", summary)
    return RefreshResult(status, summary, production)


def refresh_corpus(ctx: StageContext, setting: str, paused: bool) -> RefreshResult:
    """Refresh production's corpus per the module doc; `setting`: params nightly.refresh_corpus,
    `paused`: the registry is paused. Raises on a failure (the nightly reports it as failed)."""
    if setting == "off":
        return _skip("skipped", "corpus refresh off (params nightly.refresh_corpus)")
    if paused and setting != "blocked_or_paused":
        return _skip("skipped", f"corpus not refreshed while paused (params nightly.refresh_corpus: {setting})")
    root = registry_root(ctx.params)
    pointer = read_pointer(root) if root.is_dir() else None
    if pointer is None:
        return _skip("skipped", "corpus not refreshed: nothing is in production")
    version, production = pointer["version"], root / pointer["bundle"]
    manifest = read_manifest(production)
    name = ctx.params.section("data").train_dataset
    if manifest.get("train_dataset") != name:
        return _skip("skipped", f"corpus not refreshed: production {version} indexes "
                                f"{manifest.get('train_dataset')!r}, not data.train_dataset {name!r}", version)
    dataset = ctx.dataset(name)
    today = corpus_identity(dataset)
    recorded = (manifest.get("corpus") or {}).get("sha256")
    if recorded == today["sha256"]:
        return _skip("unchanged", f"corpus unchanged since production {version}: nothing to refresh", version)
    docs = list(dataset.iter_corpus())
    ids = [d.id for d in docs]
    if recorded is None:  # built before bundles recorded their corpus: its doc ids are what can be compared
        if not (production / DOCIDS_FILE).is_file():
            return _skip("skipped", f"corpus not refreshed: production {version} records neither its corpus "
                                    f"nor its doc ids", version)
        from uniret.retrieval.bundle import load_docids

        if load_docids(production) == ids:
            return _skip("unchanged", f"corpus unchanged since production {version} (same doc ids; its bundle "
                                      f"records no corpus hash): nothing to refresh", version)
    rejection = rejected_model(root, manifest, production)
    if rejection is not None:
        return _skip("refused", f"corpus not refreshed: production {version} carries the model of a rolled-back "
                                f"bundle: {rejection.describe()}", version)
    verified_bundle(production, root, "its corpus not refreshed")  # its model files are what gets copied
    return _build_check_promote(ctx, root, version, production, manifest, dataset, docs, paused)


def _build_check_promote(ctx: StageContext, root: Path, version: str, production: Path, manifest: dict[str, Any],
                         dataset: BeirDataset, docs: list, paused: bool) -> RefreshResult:
    from uniret.retrieval.bundle import load_docids

    bm25_index = ctx.require("bm25") / BM25_INDEXES / dataset.name
    if not bm25_index.is_dir():
        raise FileNotFoundError(f"{bm25_index}: BM25 index of {dataset.name!r} missing; rerun `uniret bm25`")
    old, new = set(load_docids(production)), [d.id for d in docs]
    added, removed = len(set(new) - old), len(old - set(new))
    gate = resolve_gate_config(ctx.params)
    system = str((manifest.get("gate") or {}).get("candidate") or gate.candidate_system)
    inputs = {"corpus": dataset.corpus_path, "bm25_index": bm25_index}
    with stage_output(ctx, STAGE, sections=["data", "bm25", "encoding", "gate"], inputs=inputs) as (tmp, out):
        bundle = tmp / BUNDLE
        metrics = build_bundle(ctx, production, manifest, dataset, docs, bm25_index, bundle,
                               {"of": version, "added": added, "removed": removed})
        checks, scores = check_bundle(ctx, dataclasses.replace(gate, candidate_system=system), bundle, production,
                                      version, metrics)
        if scores is not None:  # published with the bundle: the next gate compares with them per query
            for name, rows in scores.per_query[system].items():
                atomic_write_json(tmp / EVALUATION_DIR / PER_QUERY_DIR / system / f"{name}.json", rows)
        passed = all(c.status != "fail" for c in checks)
        out["metrics"] = {"production": version, "passed": passed, "added": added, "removed": removed,
                          "num_docs": metrics["num_docs"]}
        out["refresh_of"] = version
        atomic_write_json(tmp / RESULT_JSON, {"production": version, "passed": passed,
                                              "checks": [c.to_dict() for c in checks]})
    result = RefreshResult("blocked", "", version, None, added, removed, [c.to_dict() for c in checks])
    if not passed:
        why = "; ".join(f"{c.name}: {c.reason}" for c in checks if c.status == "fail")
        result.summary = f"corpus refresh of {version} not promoted ({why})"
        log.warning("corpus refresh: %s", result.summary)
        return result
    folder = ctx.stage_dir(STAGE)
    try:
        promoted = _promote(ctx, root, folder / BUNDLE, version, system, checks, scores,
                            folder / EVALUATION_DIR, paused)
    except PromotionHeld as exc:
        result.status, result.summary = "refused", f"corpus refresh of {version} not promoted: {exc}"
        log.warning("corpus refresh: %s", result.summary)
        return result
    result.status, result.version = "promoted", promoted
    result.summary = (f"corpus refreshed: production {promoted} is {version}'s model on today's corpus "
                      f"(+{added} -{removed} documents)")
    atomic_write_json(folder / RESULT_JSON, {**result.to_dict(), "passed": True})
    log.info("corpus refresh: %s", result.summary)
    return result


def build_bundle(ctx: StageContext, production: Path, manifest: dict[str, Any], dataset: BeirDataset, docs: list,
                 bm25_index: Path, bundle: Path, refresh: dict[str, Any]) -> dict[str, Any]:
    """Write into `bundle` production's model files and today's index structures of `docs`; returns
    the new index metrics. `refresh`: recorded in the manifest (of, added, removed)."""
    from uniret.evaluation.bundle_source import bundle_encoder_key
    from uniret.retrieval.bundle import built_retrieval, open_bundle
    from uniret.retrieval.bundle_write import dir_bytes, write_bm25_weights, write_index_structures
    from uniret.retrieval.corpus_cache import cached_corpus_encoding
    from uniret.retrieval.sharded import EncoderSpec, encode_corpus
    from uniret.retrieval.sparse import vocab_tokens

    bundle.mkdir(parents=True)
    for path in sorted(production.iterdir()):
        if path.name in REBUILT or path.name in PUBLISHED:
            continue
        (shutil.copytree if path.is_dir() else shutil.copy2)(path, bundle / path.name)
    # the encoder evaluate and the gate encode other corpora with: its int8 document graph when it has one
    opened = open_bundle(production, structures=False)
    encoding, dist = ctx.params.section("encoding"), ctx.params.section("distributed")
    encoder = opened.encoder.with_batch_size(encoding.batch_size)
    spec = EncoderSpec("onnx", str(production / ONNX_DIR), encoding.batch_size, manifest["query_max_length"],
                       manifest["doc_max_length"], tokenizer=str(production / TOKENIZER_DIR))
    ids, texts = [d.id for d in docs], [d.contents for d in docs]
    encoded = cached_corpus_encoding(
        ctx.artifacts / encoding.cache_dir, bundle_encoder_key(manifest, production / ONNX_DIR, encoding.batch_size),
        dataset.corpus_path, ids,
        lambda: encode_corpus(encoder, spec, texts, ids, dist.encode_shards, dist.encode_threads, work_dir=bundle.parent),
        label=f"{STAGE}/{dataset.name}")
    log.info("corpus refresh: %d documents of %s encoded by production's model", len(ids), dataset.name)
    metrics: dict[str, Any] = write_index_structures(bundle, ids, encoded, vocab_tokens(opened.encoder.tokenizer),
                                                     built_retrieval(manifest, production))
    shutil.copytree(bm25_index, bundle / BM25_DIR)
    bm25 = ctx.params.section("bm25")  # the bm25 stage built today's index with these
    metrics.update(write_bm25_weights(bundle, ids, bm25))
    metrics["bundle_bytes"] = dir_bytes(bundle)
    written = {k: v for k, v in manifest.items() if k not in REGISTRY_FIELDS}
    written.update(corpus=corpus_identity(dataset), refresh=refresh,
                   metrics={**(manifest.get("metrics") or {}), **metrics, "corpus_encode_docs_per_s": None},
                   params={**(manifest.get("params") or {}), "bm25": dataclasses.asdict(bm25)})
    atomic_write_json(bundle / MANIFEST, written)
    write_checksums(bundle)  # as the index stage does: whatever reads it next verifies it
    return metrics


def _skipped(name: str, reason: str) -> Check:
    return Check(name, None, None, None, "skipped", reason)


def check_bundle(ctx: StageContext, gate, bundle: Path, production: Path, version: str,
                 metrics: dict[str, Any]) -> tuple[list[Check], Any]:
    """(checks, the served mode's Scores or None) of a refreshed bundle; `gate`: the gate's config with
    candidate_system set to production's served mode."""
    from uniret.evaluation.rescore import score_bundle_mode

    try:
        files = verify_bundle(bundle)
    except IntegrityError as exc:
        return [Check("integrity", None, None, None, "fail", str(exc))], None
    checks = [Check("integrity", None, float(files), None, "pass", f"{files} files match {SUMS}")]
    scores = score_bundle_mode(ctx, bundle, gate.candidate_system)
    checks += [c for c in quality_checks(gate, scores.doc) if c.name == "min_score"]
    checks += sparsity_checks(gate, metrics, None)
    checks += latency_checks(ctx, gate, bundle, production, version)
    return checks, scores


def latency_checks(ctx: StageContext, gate, bundle: Path, production: Path, version: str) -> list[Check]:
    """The gate's latency-vs-production rules on the refreshed bundle timed beside production's, as the
    bench stage times a candidate; skipped when both bounds are off."""
    from uniret.bench.production import beside_production
    from uniret.bench.runner import bench_config, bench_queries
    from uniret.registry.gate import latency_mode
    from uniret.stages.bench import stage_config

    if gate.max_latency_p50_vs_production is None and gate.max_latency_p95_vs_production is None:
        return [_skipped("latency_vs_production", "gate.max_latency_p50/p95_vs_production are off")]
    mode = latency_mode(gate)
    base = bench_config(ctx.params)
    cfg = stage_config(base, mode)
    validated = ctx.stage_dir("validate") / VALIDATED_DATA
    root = validated if (validated / str(cfg.dataset) / "corpus.jsonl").is_file() else ctx.data_root
    side: dict[str, Any] = {}
    if base.stage.production_rounds:
        side = beside_production(bundle.resolve(), production, version, mode, bench_queries(root, cfg)[0], cfg.k,
                                 cfg.threads, cfg.warmup_queries, base.stage.production_rounds,
                                 ctx.params.section("retrieval"))
    return production_latency_checks(gate, {"vs_production": side}, mode, None, version)


def _promote(ctx: StageContext, root: Path, bundle: Path, version: str, system: str, checks: list[Check], scores,
             evaluation: Path, paused: bool) -> str:
    """Publish and flip the pointer to the refreshed bundle; its version."""
    from uniret.milvus.promotion import engine_hook, export_before_flip

    validate = ctx.stage_dir("validate")
    validate = validate if validate.is_dir() else None
    lineage = {**(read_manifest(root / BUNDLES / version).get("lineage") or {}),
               "data_version": data_version(validate), "evaluation_basis": evaluation_basis(ctx.params, validate),
               "git_commit": git_commit(params_dir(ctx.params)), "refresh_of": version, "reason": reason_text(version)}
    decision = {"passed": True, "candidate": system, "production": version, "kind": "corpus_refresh",
                "checks": [c.to_dict() for c in checks]}
    served = evaluation / PER_QUERY_DIR / system
    attachments = {f"{EVALUATION_DIR}/{PER_QUERY_DIR}/{system}": served} if served.is_dir() else {}
    checkpoint = root / BUNDLES / version / CHECKPOINT_DIR  # the model is production's: so is its checkpoint
    if checkpoint.is_dir():
        attachments[CHECKPOINT_DIR] = checkpoint
    registry = registry_config(ctx.params)
    milvus = ctx.params.section("milvus") if "milvus" in ctx.params.raw else None
    engine, on_change = engine_hook(milvus) if milvus is not None else (None, None)
    if engine is not None:  # the refreshed collection is complete before the flip moves the alias onto it
        log.info("corpus refresh: milvus export %s", export_before_flip(engine, milvus, bundle))
    try:
        result = promote(root, bundle, evaluation=scores.doc, decision=decision, lineage=lineage,
                         serving=serving_from(ctx.params), dvc_push=registry.dvc_push,
                         keep_history=registry.keep_history, attachments=attachments or None, on_change=on_change,
                         while_paused=paused, reason=reason_text(version))
    finally:
        if engine is not None:
            engine.close()
    return result.version
