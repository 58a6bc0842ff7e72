"""Dev-split levers of the static query side (hybrid_fast), on an index stage's finished bundle.

For each variant of `index.static_query` (and of hybrid_fast's fusion depth), rebuild the static
tables from the bundle's checkpoint and learn hybrid_fast's weights on the dev sets exactly as the
index stage does (uniret.evaluation.fusion_learning.learn_fusion: the SciFact dev carve and NFCorpus dev),
reusing the corpus encodings of the encoding cache. Writes one JSON of dev figures per variant.
Never reads a test split.

    python lab/static_query_levers.py --params params.yaml --artifacts artifacts \
        --out lab/results/static_query_levers.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import time
from pathlib import Path

from dag_args import add_dag_args, dag_context

VARIANTS = {
    "default": {},
    "no_other_corpora": {"other_corpus_sentences": 0},
    "no_distillation": {"epochs": 0},
    "half_texts": {"sentences": 4000, "other_corpus_sentences": 750, "titles": False},
    "epochs_8": {"epochs": 8},
    "depth_100": {"_fast_depth": 100},
    "depth_300": {"_fast_depth": 300},
    "two_signals_no_dense": {"_fast_runs": ["bm25", "lexical_static"]},
    "two_signals_no_sparse": {"_fast_runs": ["bm25", "dense_static"]},
    # E40: NFCorpus dev searched with the bundle's (SciFact) IDF table instead of its own corpus's
    "bundle_idf": {"corpus_idf": False},
    # E41: fine-tuning the tower against the frozen document vectors (train queries outside the dev carve)
    "finetune_5": {"finetune_epochs": 5},
    "finetune_10": {"finetune_epochs": 10},
    "finetune_20": {"finetune_epochs": 20},
    "finetune_10_anchor_0.3": {"finetune_epochs": 10, "finetune_anchor": 0.3},
    "finetune_10_no_anchor": {"finetune_epochs": 10, "finetune_anchor": 0.0},
    "no_finetune": {"finetune_epochs": 0},
    "other_corpus_sentences_5000": {"other_corpus_sentences": 5000},
    # E71: training on clicks, on a loop arm's workspace (uniret loop run): the traffic domain's dev split
    "clicks_weight_0.3": {"clicks_weight": 0.3},
    "clicks_weight_3": {"clicks_weight": 3.0},
    "clicks_naive": {"clicks": "naive"},
    "clicks_none": {"clicks": "none"},
    "no_logged_queries": {"logged_queries": False},
    "clip_2": {"_clip": 2.0},
    "clip_5": {"_clip": 5.0},
    # E72: one example per (query, doc) weighted by its click rate, not its click count
    "clicks_rate": {"clicks_aggregate": "rate"},
    "clicks_rate_naive": {"clicks_aggregate": "rate", "clicks": "naive"},
    # E73: the default settings, the tables rebuilt from the feedback output (`default` reuses the bundle's)
    "rebuilt": {"clicks": "ips"},
}


def _reclipped(feedback: Path, clip: float, out: Path) -> Path:
    """A copy of the feedback stage's output with its IPS weights clipped at `clip` (below the stage's own
    clip, min(weight, clip) is exactly what the stage would have written)."""
    import shutil

    from uniret.runtime import read_manifest

    stage_clip = (read_manifest(feedback).get("params") or {}).get("feedback", {}).get("clip")
    if stage_clip is not None and clip > stage_clip:
        raise ValueError(f"clip {clip} is above the feedback stage's {stage_clip}: its weights cannot be unclipped")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(feedback, out)
    rows = [json.loads(line) for line in (feedback / "pairs" / "ips.jsonl").read_text(encoding="utf-8").splitlines()]
    (out / "pairs" / "ips.jsonl").write_text(
        "".join(json.dumps({**r, "weight": min(float(r["weight"]), clip)}) + "\n" for r in rows), encoding="utf-8")
    return out


def _memoise_encoders() -> None:
    """Token vectors depend on the checkpoint only and teacher vectors on the text: compute each
    once across variants (the product computes them once per index run anyway)."""
    import numpy as np

    from uniret.training import static_tower

    token_vectors, teacher_vectors = static_tower.token_vectors, static_tower.teacher_vectors
    memo: dict = {}

    def cached_tokens(model, tokenizer, batch, ids=None):
        key = ("tokens", None if ids is None else tuple(ids.tolist()))
        if key not in memo:
            memo[key] = token_vectors(model, tokenizer, batch, ids)
        return memo[key]

    def cached_teacher(model, tokenizer, texts, max_length, batch=128):
        missing = [t for t in dict.fromkeys(texts) if t not in memo]
        if missing:
            for text, vec in zip(missing, teacher_vectors(model, tokenizer, missing, max_length, batch), strict=True):
                memo[text] = vec
        return np.stack([memo[t] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)

    static_tower.token_vectors, static_tower.teacher_vectors = cached_tokens, cached_teacher


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_dag_args(parser)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from uniret.evaluation.fusion_learning import learn_fusion
    from uniret.models.factory import load_model
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.corpus_cache import cached_corpus_encoding
    from uniret.stages import index as index_stage

    _memoise_encoders()
    feedback_dir = index_stage.feedback_output
    ctx = dag_context(args)
    cfg = ctx.params.section("index")
    rcfg = ctx.params.section("retrieval")
    data = ctx.params.section("data")
    bundle = open_bundle(ctx.stage_dir("index") / "bundle")
    manifest = bundle.manifest
    model, tokenizer = load_model(Path(manifest["model"]["checkpoint"]))
    dataset = ctx.dataset(data.train_dataset)
    docs = list(dataset.iter_corpus())
    batch = ctx.params.section("encoding").batch_size
    key = index_stage._cache_key(manifest["model"], manifest["onnx"]["doc_int8"]["used"], batch)
    root = ctx.artifacts / ctx.params.section("encoding").cache_dir
    encoded = cached_corpus_encoding(root, key, dataset.corpus_path, [d.id for d in docs],
                                     lambda: (_ for _ in ()).throw(RuntimeError("corpus not in the encoding cache")))
    onnx_enc = bundle.encoder.with_batch_size(batch)
    qlen, dlen = manifest["query_max_length"], manifest["doc_max_length"]
    results = {}
    for name in args.variants:
        overrides = dict(VARIANTS[name])
        clip = overrides.pop("_clip", None)
        index_stage.feedback_output = feedback_dir if clip is None else (
            lambda ctx, c=clip, n=name: _reclipped(feedback_dir(ctx), c, ctx.artifacts / ".levers" / n / "feedback"))
        fusion = dataclasses.replace(rcfg.fusion, fast_depth=overrides.pop("_fast_depth", rcfg.fusion.fast_depth),
                                     fast_runs=overrides.pop("_fast_runs", rcfg.fusion.fast_runs))
        scfg = dataclasses.replace(cfg.static_query, **overrides)
        vcfg = dataclasses.replace(cfg, static_query=scfg)
        vr = dataclasses.replace(rcfg, fusion=fusion, modes=[m for m in rcfg.modes if m != "hybrid"])
        start = time.perf_counter()
        tmp = ctx.artifacts / ".levers" / name
        tmp.mkdir(parents=True, exist_ok=True)
        if set(overrides) - {"corpus_idf"} or clip is not None:  # the tables themselves vary: build them again
            static, meta = index_stage._static_query(ctx, vcfg, model, tokenizer, dataset, docs, tmp, qlen, dlen,
                                                     encoded.dense)
        else:  # only the fusion varies: the bundle's own tables
            static, meta = bundle.index.static_query, manifest["static_query"]
        learned = learn_fusion(ctx, vcfg, vr, dataset, [d.id for d in docs], encoded, onnx_enc, key,
                               static)
        results[name] = {"overrides": VARIANTS[name], "seconds": round(time.perf_counter() - start, 1),
                         "static": {k: meta.get(k) for k in ("texts", "text_sources", "loss_by_epoch", "finetune_queries",
                                                         "finetune_loss_by_epoch", "seconds")},
                         "dev": learned["modes"], "sets": learned["sets"]}
        fast = learned["modes"].get("hybrid_fast", {})
        logging.info("%s: hybrid_fast dev %s singles %s", name, fast.get("dev_score"), fast.get("dev_single"))
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
