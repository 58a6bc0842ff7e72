"""The mine stage's corpus pass with torch's dynamic int8 (every nn.Linear) against fp32: docs/s
and how far the int8 vectors move from the fp32 ones (E91).

Usage: python lab/mine_int8.py --checkpoint artifacts/warmup/model [--docs 512] [--length 128] \
           [--rounds 2] [--data ../shared/data] [--dataset scifact] [--out lab/results/mine_int8.json]

The first `--docs` documents of the dataset's corpus, encoded as the mine stage encodes them
(uniret.retrieval.encoding.TorchTextEncoder, length-sorted batches of the params' size, documents
cut at `--length`), by the checkpoint in fp32 and after `torch.ao.quantization.quantize_dynamic`,
alternated for `--rounds`. Take it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from itertools import islice
from pathlib import Path


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True, type=Path)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--dataset", default="scifact")
    ap.add_argument("--docs", type=int, default=512)
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("lab/results/mine_int8.json"))
    args = ap.parse_args(argv)

    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from encoding_batch import _shown

    from uniret.bench.machine import machine_info
    from uniret.data.beir import iter_corpus
    from uniret.export.parity import row_cosines
    from uniret.models.factory import load_model
    from uniret.retrieval.encoding import TorchTextEncoder

    model, tokenizer = load_model(args.checkpoint)
    texts = [doc.contents for doc in islice(iter_corpus(args.data / args.dataset / "corpus.jsonl"), args.docs)]
    quantized = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    encoders = {name: TorchTextEncoder(m, tokenizer, args.batch, model.model_config.query_max_length, args.length)
                for name, m in (("fp32", model), ("int8", quantized))}
    rates: dict[str, list[float]] = {name: [] for name in encoders}
    out = {}
    for _ in range(args.rounds):
        for name, encoder in encoders.items():
            start = time.perf_counter()
            out[name] = encoder.encode(texts, is_query=False)
            rates[name].append(round(len(texts) / (time.perf_counter() - start), 1))
    result = {"checkpoint": _shown(args.checkpoint), "dataset": args.dataset, "docs": len(texts),
              "length": args.length, "batch": args.batch, "machine": machine_info(), "docs_per_s": rates}
    for channel in ("dense", "sparse"):
        a, b = getattr(out["fp32"], channel), getattr(out["int8"], channel)
        if a is not None:
            cos = row_cosines(a, b)
            result[f"{channel}_cosine"] = {"min": round(float(cos.min()), 4), "mean": round(float(cos.mean()), 4)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
