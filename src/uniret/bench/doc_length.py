"""Document length for the default recipe's encoders: quality on the dev split vs encoding cost.

    python -m uniret.bench.doc_length --lengths 128 256 512 --extra-docs 500

For each maximum document length, the default recipe's starting encoders (the pair's dense and
lexicon modules as shipped: the length is chosen before training) encode a SciFact sub-corpus
made of every document judged for a train query plus `--extra-docs` random others (seeded), and
the dev queries (data.dev, carved from the train qrels; no test qrels are read) are scored:
nDCG@10 of the dense head, the lexicon head, and their equal-weight min-max fusion. Cost is
reported twice: the mean tokens per document after truncation over each eval corpus (what the
encoders' work grows with: deterministic) and the docs/s measured here (depends on the load of
the machine; the JSON records the load average). Writes <out>/doc_length.{json,md}.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import time
from pathlib import Path

import numpy as np

from uniret.bench.machine import machine_info
from uniret.utils.files import atomic_write_json, atomic_write_text

log = logging.getLogger("uniret.bench")

JSON_FILE = "doc_length.json"
MD_FILE = "doc_length.md"


def sub_corpus(dataset, judged: set[str], extra: int, seed: int) -> list:
    """The documents of `judged` plus `extra` others drawn with `seed`, in corpus order."""
    docs = list(dataset.iter_corpus())
    others = [d for d in docs if d.id not in judged]
    keep = judged | {d.id for d in random.Random(seed).sample(others, min(extra, len(others)))}
    return [d for d in docs if d.id in keep]


def _mean_tokens(tokenizer, datasets, length: int, sample: int, seed: int) -> dict[str, float]:
    """Mean tokens per document after truncation at `length`, per corpus (a seeded sample)."""
    out = {}
    for ds in datasets:
        docs = [d.contents for d in ds.iter_corpus()]
        picked = random.Random(seed).sample(docs, min(sample, len(docs)))
        out[ds.name] = float(np.mean([len(tokenizer(t, truncation=True, max_length=length)["input_ids"])
                                      for t in picked]))
    return out


def measure(params, data_root: Path, lengths: list[int], extra_docs: int, seed: int = 5,
            token_sample: int = 500) -> dict:
    """The figures of the module doc, as a JSON-able dict."""
    import dataclasses

    from uniret.data.beir import BeirDataset
    from uniret.data.dev_split import split_qrels
    from uniret.evaluation.metrics import evaluate_run
    from uniret.models.factory import build_model
    from uniret.retrieval.base import encode_queries
    from uniret.retrieval.encoding import TorchTextEncoder
    from uniret.retrieval.fusion import interpolate
    from uniret.retrieval.modes import build_searchers, memory_corpus_index

    data = params.section("data")
    rcfg = params.section("retrieval")
    recipe = params.section("model").active()
    train = BeirDataset(data_root / data.train_dataset, data.train_dataset)
    qrels_all = train.qrels(data.train_split)
    _, dev = split_qrels(qrels_all, data.dev)
    judged = {d for rels in qrels_all.values() for d in rels}
    docs = sub_corpus(train, judged, extra_docs, seed)
    queries = {q: t for q, t in train.split_queries(data.train_split).items() if q in dev}
    evals = [BeirDataset(data_root / n, n) for n in data.eval_datasets]
    model = build_model(recipe.model).eval()
    rows = []
    for length in lengths:
        cfg = dataclasses.replace(recipe.model, doc_max_length=length)
        encoder = TorchTextEncoder(model, model.tokenizer, params.section("encoding").batch_size,
                                   cfg.query_max_length, length)
        start = time.perf_counter()
        encoded = encoder.encode([d.contents for d in docs], is_query=False)
        seconds = time.perf_counter() - start
        index = memory_corpus_index([d.id for d in docs], encoded, rcfg)
        searchers = build_searchers(index, rcfg, encoder, modes=["dense", "lexical"])
        batch = encode_queries(queries, encoder)
        runs = {m: s.search_batch(batch, 100) for m, s in searchers.items()}
        runs["fused"] = interpolate([runs["lexical"], runs["dense"]], [0.5, 0.5], 100)
        scores = {m: round(evaluate_run(dev, r, ["ndcg@10"])[1]["ndcg@10"], 4) for m, r in runs.items()}
        row = {"doc_max_length": length, "dev_ndcg@10": scores, "docs": len(docs),
               "docs_per_s": round(len(docs) / seconds, 2),
               "mean_tokens": _mean_tokens(model.tokenizer, evals, length, token_sample, seed),
               "load_average": os.getloadavg()[0]}
        log.info("doc length %d: %s", length, row)
        rows.append(row)
    return {"recipe": params.section("model").recipe, "dev_queries": len(queries), "sub_corpus_docs": len(docs),
            "extra_docs": extra_docs, "rows": rows, "machine": machine_info()}


def to_markdown(result: dict) -> str:
    """The doc-length table."""
    rows = result["rows"]
    names = list(rows[0]["mean_tokens"])
    lines = [
        f"# Document length ({result['recipe']} encoders, untrained): dev nDCG@10 vs cost",
        "",
        f"Dev split: {result['dev_queries']} queries carved from the train qrels; sub-corpus of "
        f"{result['sub_corpus_docs']} SciFact documents (all judged train documents + {result['extra_docs']} random).",
        "Mean tokens/doc after truncation is the deterministic cost proxy; docs/s was measured on this machine "
        "at the load average shown.",
        "",
        "| max length | dense | lexical | fused (0.5/0.5) | docs/s (load) | " + " | ".join(f"tokens/doc {n}" for n in names) + " |",
        "| ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in names) + " |",
    ]
    for r in rows:
        s = r["dev_ndcg@10"]
        lines.append(f"| {r['doc_max_length']} | {s['dense']:.4f} | {s['lexical']:.4f} | {s['fused']:.4f} | "
                     f"{r['docs_per_s']} ({r['load_average']:.1f}) | "
                     + " | ".join(f"{r['mean_tokens'][n]:.0f}" for n in names) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from uniret.config import load_params
    from uniret.data.roots import resolve_data_root

    parser = argparse.ArgumentParser(prog="python -m uniret.bench.doc_length", description=__doc__.split("\n")[0])
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--data", default=None, help="data root (default: as the stages resolve it)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256, 512])
    parser.add_argument("--extra-docs", type=int, default=500, help="random non-judged documents added")
    parser.add_argument("--out", default="lab/results")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    params = load_params(args.params, args.profile)
    root = resolve_data_root(args.data, params.section("data").root)
    result = measure(params, Path(root), args.lengths, args.extra_docs)
    out = Path(args.out)
    atomic_write_json(out / JSON_FILE, result)
    atomic_write_text(out / MD_FILE, to_markdown(result))
    print(to_markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
