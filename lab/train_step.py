"""What one training step of the default pair model costs on this CPU: fp32 vs bf16 autocast, and
the lexicon head's active-entries gradient vs the full logits backward.

Usage: python lab/train_step.py [--profile cpu] [--data ../shared/data] [--repeats 4]
       [--queries 8] [--docs 32] [--out lab/results/train_step.json]

The model is the active recipe's pretrained network (params.yaml `model.recipe`, the profile's
lengths); the texts are real SciFact train queries and documents tokenized at the training shapes
(queries at query_max_length, documents at training.continual.doc_max_length). Each figure is the
median wall time of `--repeats` forward + backward passes (after one warm-up pass) of the summed
outputs; take it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from itertools import islice
from pathlib import Path


def _timed(fn, repeats: int) -> float:
    fn()  # warm-up: allocator, oneDNN kernel choice
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--queries", type=int, default=8)
    parser.add_argument("--docs", type=int, default=32)
    parser.add_argument("--out", default="lab/results/train_step.json")
    args = parser.parse_args()

    import torch

    from uniret.bench.machine import machine_info
    from uniret.config import load_params
    from uniret.data.beir import BeirDataset
    from uniret.models.backbones import base_model, mlm_head
    from uniret.models.factory import build_model
    from uniret.models.pooling import splade_pool, vocab_max
    from uniret.training.device import cpu_has_native_bf16
    from uniret.utils.files import atomic_write_json

    params = load_params(args.params, args.profile)
    recipe = params.section("model")
    mcfg = recipe.active().model
    if mcfg.arch != "pair":
        parser.error(f"recipe {recipe.recipe!r} trains arch {mcfg.arch!r}; this probe times the pair model")
    doc_length = params.section("training").continual.doc_max_length or mcfg.doc_max_length
    model = build_model(mcfg).train()
    tokenizer = model.tokenizer
    scifact = BeirDataset(Path(args.data) / "scifact", "scifact")
    queries = list(scifact.split_queries("train").values())[: args.queries]
    docs = [d.contents for d in islice(scifact.iter_corpus(), args.docs)]
    batches = [tokenizer(texts, padding=True, truncation=True, max_length=length, return_tensors="pt")
               for texts, length in ((queries, mcfg.query_max_length), (docs, doc_length))]
    lexicon = model.lexicon.mlm

    def lexicon_pool(full_backward: bool):
        def run():
            total = 0.0
            for enc in batches:
                hidden = base_model(lexicon)(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
                hidden = hidden.last_hidden_state
                if full_backward:  # the pooling before: autograd through the whole logits GEMM
                    pooled = torch.log1p(torch.relu(vocab_max(mlm_head(lexicon), hidden, enc["attention_mask"])))
                else:
                    pooled = splade_pool(mlm_head(lexicon), hidden, enc["attention_mask"])
                total = total + pooled.float().sum()
            return total
        return run

    def dense():
        return sum(model.dense(e["input_ids"], e["attention_mask"], is_query=i == 0).dense.float().sum()
                   for i, e in enumerate(batches))

    def pair():
        total = 0.0
        for i, enc in enumerate(batches):
            out = model(enc["input_ids"], enc["attention_mask"], is_query=i == 0)
            total = total + out.dense.float().sum() + out.sparse.float().sum()
        return total

    parts = {"dense module": dense, "lexicon module (active entries)": lexicon_pool(False),
             "lexicon module (full logits backward)": lexicon_pool(True), "pair model": pair}
    rows = []
    for precision in ("fp32", "bf16"):
        autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16"
                    else contextlib.nullcontext())

        for name, loss_fn in parts.items():
            def step(loss_fn=loss_fn, autocast=autocast):
                with autocast:
                    loss = loss_fn()
                loss.backward()
                model.zero_grad(set_to_none=True)

            ms = _timed(step, args.repeats) * 1e3
            row = {"precision": precision, "part": name, "forward_backward_ms": round(ms, 1)}
            print(row, flush=True)
            rows.append(row)
    atomic_write_json(args.out, {
        "recipe": recipe.recipe, "profile": args.profile, "queries": len(queries), "docs": len(docs),
        "query_max_length": mcfg.query_max_length, "doc_max_length": doc_length,
        "threads": torch.get_num_threads(), "cpu_native_bf16": cpu_has_native_bf16(),
        "machine": machine_info(), "rows": rows,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
