"""Issue 10's first route, measured at its crux: a lexicon head on MiniLM's shared layers.

    python lab/shared_lexicon.py --steps 300 --eval-at 0 100 300 [--init identity|random]

UnifieR on MiniLM would share one backbone between the dense module (MiniLM as trained: layers
above `--shared-layers`, mean pooling, cosine) and a vocabulary-space lexicon module: a BERT MLM
transform on the shared layers' states with its decoder tied to MiniLM's word embeddings. MiniLM
ships no MLM head, so the head starts untrained and is warmed by distilling SPLADE-tiny's term
weights (the default pair's lexicon module). The question that decides the route: does the head
reach SPLADE-tiny's lexicon within a CPU training budget?

Training (in train mode, MiniLM's dropout on, as the training stages run): the backbone stays frozen
(the dense module's weights stay MiniLM's); the transform and the decoder bias learn SPLADE-tiny's
max-pooled weights on label-free text (SciFact corpus documents and the train queries outside the
dev carve, cut at 128 tokens). The loss is read in the raw max-logit space so that an entry the
teacher uses but the student does not yet activate still gets a gradient (log(1 + relu(.)) has none
there): squared error to expm1(teacher weight) on the teacher's active entries, and a squared hinge
pushing the student's other entries below -1. `--init identity` starts the transform as the identity
(shifted into GELU's linear range; its LayerNorm then removes the shift) and the decoder bias at
`--bias`: MiniLM's layer-4 states still point at their own token's embedding, so the untrained head
is already a weighted bag of words. `--init random` is transformers' initialisation of a missing MLM
head.

Evaluation (dev only): the 162 dev queries (data.dev, carved from SciFact's train qrels) over the
sub-corpus of uniret.bench.doc_length (every judged train document + 500 random, seed 5), 256
tokens: nDCG@10 of the head, of SPLADE-tiny's lexicon, of MiniLM's dense vectors, and of the two
equal-weight min-max fusions (head + MiniLM, SPLADE-tiny + MiniLM: the pair's starting point).
Writes lab/results/shared_lexicon.json. Timings depend on the machine's load (recorded).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import time
from pathlib import Path

import torch

from uniret.bench.doc_length import sub_corpus
from uniret.bench.machine import machine_info
from uniret.utils.files import atomic_write_json

log = logging.getLogger("uniret.bench")

# MiniLM's hidden states are layer-normalised with a few large entries; +3 keeps nearly all of them
# where GELU is close to the identity, and the transform's LayerNorm removes the constant again.
IDENTITY_SHIFT = 3.0
# the student's non-teacher entries are pushed below this raw logit (a margin under relu's 0)
HINGE = 1.0


def build_student(shared_layers: int, init: str, bias: float, seed: int):
    """UnifieR on MiniLM: shared layers + dense layers above them, lexicon head on the shared states."""
    from transformers import AutoConfig

    from uniret.models.backbones import resolve_backbone
    from uniret.models.unifier import UnifierEncoder

    torch.manual_seed(seed)
    layers = AutoConfig.from_pretrained(resolve_backbone("minilm")).num_hidden_layers
    student = UnifierEncoder("minilm", shared_layers=shared_layers, dense_layers=layers - shared_layers,
                             lexicon_layers=0)
    head = student.mlm_head.predictions
    if init == "identity":
        with torch.no_grad():
            head.transform.dense.weight.copy_(torch.eye(head.transform.dense.weight.shape[0]))
            head.transform.dense.bias.fill_(IDENTITY_SHIFT)
            head.bias.fill_(bias)
    for p in student.parameters():
        p.requires_grad_(False)
    trainable = [*head.transform.parameters(), head.bias]
    for p in trainable:
        p.requires_grad_(True)
    return student, trainable


def head_states(student, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The transform's output per token, as UnifierEncoder.forward feeds its decoder (padding
    positions filled with a kept token, as the pooling does)."""
    from uniret.models.pooling import fill_padding

    with torch.no_grad():  # the backbone is frozen
        _, lexicon_states = student.module_states(input_ids, attention_mask)
    return fill_padding(student.mlm_head.predictions.transform(lexicon_states), attention_mask.bool())


def distill_loss(student, states: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, the student's pooled weights) in the raw max-logit space (module doc)."""
    from uniret.models.pooling import linear_max

    decoder = student.mlm_head.predictions.decoder
    with torch.no_grad():
        raw, arg = linear_max(decoder, states.detach(), with_indices=True)
        rows, cols = ((target > 0) | (raw > -HINGE)).nonzero(as_tuple=True)
        goal = torch.expm1(target[rows, cols])
        taught = target[rows, cols] > 0
    logits = (states[rows, arg[rows, cols]] * decoder.weight[cols]).sum(-1) + decoder.bias[cols]
    per_entry = torch.where(taught, (logits - goal) ** 2, torch.relu(logits + HINGE) ** 2)
    return per_entry.sum() / target.shape[0], torch.log1p(torch.relu(raw))


def main(argv: list[str] | None = None) -> int:
    from uniret.config import load_params
    from uniret.data.beir import BeirDataset
    from uniret.data.dev_split import split_qrels
    from uniret.data.roots import resolve_data_root
    from uniret.evaluation.metrics import evaluate_run
    from uniret.models.backbones import load_tokenizer
    from uniret.models.dense import DenseEncoder
    from uniret.models.splade import SpladeEncoder, freeze
    from uniret.retrieval.base import encode_queries
    from uniret.retrieval.encoding import TorchTextEncoder
    from uniret.retrieval.fusion import interpolate
    from uniret.retrieval.modes import build_searchers, memory_corpus_index

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--data", default=None, help="data root (default: as the stages resolve it)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--eval-at", type=int, nargs="+", default=[0, 100, 300], help="steps to score on dev")
    parser.add_argument("--shared-layers", type=int, default=4, help="MiniLM layers under the lexicon head")
    parser.add_argument("--init", choices=["identity", "random"], default="identity")
    parser.add_argument("--bias", type=float, default=-8.5, help="identity init: the decoder bias")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--docs-per-step", type=int, default=24)
    parser.add_argument("--queries-per-step", type=int, default=8)
    parser.add_argument("--train-length", type=int, default=128)
    parser.add_argument("--eval-length", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="lab/results/shared_lexicon.json")
    args = parser.parse_args(argv)
    if max(args.eval_at) > args.steps:
        parser.error(f"--eval-at {max(args.eval_at)} is beyond --steps {args.steps}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    params = load_params(args.params, args.profile)
    data = params.section("data")
    rcfg = params.section("retrieval")
    batch_size = params.section("encoding").batch_size
    root = Path(resolve_data_root(args.data, data.root))
    train = BeirDataset(root / data.train_dataset, data.train_dataset)
    qrels = train.qrels(data.train_split)
    _, dev = split_qrels(qrels, data.dev)
    all_queries = train.split_queries(data.train_split)
    dev_queries = {q: t for q, t in all_queries.items() if q in dev}
    train_texts = {"docs": [d.contents for d in train.iter_corpus()],
                   "queries": [t for q, t in all_queries.items() if q not in dev]}
    corpus = sub_corpus(train, {d for rels in qrels.values() for d in rels}, 500, 5)
    ids = [d.id for d in corpus]
    texts = [d.contents for d in corpus]
    tokenizer = load_tokenizer("minilm")
    query_length = params.section("model").active().model.query_max_length  # the default recipe's

    def dev_run(model, mode: str):
        encoder = TorchTextEncoder(model, tokenizer, batch_size, query_length, args.eval_length)
        start = time.perf_counter()
        encoded = encoder.encode(texts, is_query=False)
        seconds = time.perf_counter() - start
        searcher = build_searchers(memory_corpus_index(ids, encoded, rcfg), rcfg, encoder, modes=[mode])[mode]
        active = float((encoded.sparse > 0).sum(axis=1).mean()) if mode == "lexical" else None
        return searcher.search_batch(encode_queries(dev_queries, encoder), 100), seconds, active

    def ndcg(run) -> float:
        return round(evaluate_run(dev, run, ["ndcg@10"])[1]["ndcg@10"], 4)

    rows = []
    minilm = DenseEncoder("minilm", "mean", True, query_scale=20.0).eval()
    dense_run, dense_s, _ = dev_run(minilm, "dense")
    splade = freeze(SpladeEncoder("splade-tiny"))
    splade_run, splade_s, splade_active = dev_run(splade, "lexical")
    reference = {"minilm_dense": ndcg(dense_run), "splade_tiny_lexical": ndcg(splade_run),
                 "splade_tiny_active_per_doc": round(splade_active, 1),
                 "pair_fused": ndcg(interpolate([splade_run, dense_run], [0.5, 0.5], 100)),
                 "encode_seconds": {"minilm": round(dense_s, 1), "splade_tiny": round(splade_s, 1)}}
    log.info("references: %s", reference)

    student, trainable = build_student(args.shared_layers, args.init, args.bias, args.seed)
    optimizer = torch.optim.AdamW(trainable, lr=args.lr)
    rng = random.Random(args.seed)
    train_seconds = 0.0
    student.train()  # as the training stages run: MiniLM's dropout on (the frozen layers too)
    for step in range(args.steps + 1):
        if step in args.eval_at:
            run, seconds, active = dev_run(student, "lexical")
            row = {"step": step, "train_seconds": round(train_seconds, 1), "lexical": ndcg(run),
                   "fused_with_minilm": ndcg(interpolate([run, dense_run], [0.5, 0.5], 100)),
                   "active_per_doc": round(active, 1), "encode_seconds": round(seconds, 1)}
            log.info("step %d: %s", step, row)
            rows.append(row)
            student.train()  # encoding switched it to eval mode
        if step == args.steps:
            break
        start = time.perf_counter()
        batch = tokenizer(rng.sample(train_texts["docs"], args.docs_per_step)
                          + rng.sample(train_texts["queries"], args.queries_per_step),
                          truncation=True, max_length=args.train_length, padding=True, return_tensors="pt")
        with torch.no_grad():
            target = splade(batch["input_ids"], batch["attention_mask"]).sparse
        loss, _ = distill_loss(student, head_states(student, batch["input_ids"], batch["attention_mask"]), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        train_seconds += time.perf_counter() - start
        if (step + 1) % 25 == 0:
            log.info("step %d loss %.1f (%.1f s/step)", step + 1, float(loss), train_seconds / (step + 1))

    result = {"settings": {k: v for k, v in vars(args).items() if k not in ("params", "data", "out")},
              "dev_queries": len(dev_queries), "sub_corpus_docs": len(corpus), "references": reference,
              "rows": rows, "load_average": os.getloadavg()[0], "machine": machine_info()}
    atomic_write_json(Path(args.out), result)
    print(f"references: {reference}")
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
