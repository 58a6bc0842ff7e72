"""Corpus-encoding batch size: docs/s and peak RSS of the torch encoder (the mine stage's) and of a
bundle's ONNX document graph (the index and evaluate stages'; doc.int8.onnx when the bundle kept it).

Usage: python lab/encoding_batch.py --checkpoint artifacts/continual/model \
           --bundle artifacts/index/bundle [--batches 32 16] [--docs 192] [--rounds 2] \
           [--dataset scifact] [--encoders torch onnx] [--arena on pattern off shrink] \
           [--data ../shared/data] [--out lab/results/encoding_batch.json]

Each (encoder, batch) runs in its own process, interleaved per round: it encodes one warm-up
batch, then the first `--docs` SciFact documents (length-sorted batches, as the stages encode),
and reports docs/s and its peak RSS (VmHWM: Linux carries ru_maxrss over fork and exec). Torch
runs in fp32 on 2 threads; ONNX Runtime with its default threads. `--arena` measures the ONNX rows
with uniret's memory setting (`on`: CPU arena on, no memory pattern for the document graph), with
ONNX Runtime's default memory pattern (`pattern`: a planned block per input shape, which grew the
arena over a long corpus pass), with the arena off, or shrunk after every run (RunOptions
`memory.enable_memory_arena_shrinkage`).
Take it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def vm_hwm_bytes() -> int:
    """This process's peak resident set size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("/proc/self/status has no VmHWM line")


def _arena_sessions(arena: str) -> None:
    """Make uniret's ONNX sessions (uniret.retrieval.onnx_encoder.inference_session) run with the memory
    setting `arena`: "on" leaves them as they are (CPU arena on, no memory pattern for documents);
    "pattern" plans memory per input shape as ONNX Runtime does by default (uniret before
    2026-11-26); "off" disables the arena; "shrink" shrinks it after every run."""
    if arena == "on":
        return
    import onnxruntime as ort

    import uniret.retrieval.onnx_encoder as onnx_encoder

    made = onnx_encoder.inference_session

    def session(path: Path, threads: int | None, memory_pattern: bool = True):
        if arena == "pattern":
            return made(path, threads, memory_pattern=True)
        if arena == "off":
            return made(path, threads, memory_pattern, cpu_arena=False)
        inner = made(path, threads, memory_pattern)
        shrink = ort.RunOptions()
        shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

        class Shrinking:
            """The session, every run followed by an arena shrink."""

            def __getattr__(self, name):
                return getattr(inner, name)

            def run(self, names, feeds, run_options=None):
                return inner.run(names, feeds, shrink)

        return Shrinking()

    onnx_encoder.inference_session = session


def _encoder(kind: str, batch: int, checkpoint: Path, bundle: Path):
    if kind == "torch":
        import torch

        from uniret.models.factory import load_model
        from uniret.retrieval.encoding import TorchTextEncoder

        torch.set_num_threads(2)
        model, tokenizer = load_model(checkpoint)
        cfg = model.model_config
        return TorchTextEncoder(model, tokenizer, batch, cfg.query_max_length, cfg.doc_max_length), "torch fp32"
    from transformers import AutoTokenizer

    from uniret.retrieval.bundle import ONNX_DIR, TOKENIZER_DIR, read_bundle_manifest
    from uniret.retrieval.onnx_encoder import OnnxEncoder

    manifest = read_bundle_manifest(bundle)
    doc_file = "doc.int8.onnx" if (bundle / ONNX_DIR / "doc.int8.onnx").is_file() else None
    tokenizer = AutoTokenizer.from_pretrained(str(bundle / TOKENIZER_DIR), local_files_only=True)
    encoder = OnnxEncoder(bundle / ONNX_DIR, tokenizer, batch, manifest["query_max_length"],
                          manifest["doc_max_length"], doc_file=doc_file)
    return encoder, doc_file or "doc.onnx"


def measure(kind: str, batch: int, checkpoint: Path, bundle: Path, data: Path, n_docs: int, dataset: str = "scifact",
            arena: str = "on") -> dict:
    """docs/s and peak RSS of one encoder at one batch size (call it in a fresh process)."""
    from itertools import islice

    from uniret.data.beir import BeirDataset

    texts = [d.contents for d in islice(BeirDataset(data / dataset).iter_corpus(), n_docs)]
    _arena_sessions(arena if kind == "onnx" else "on")
    encoder, graph = _encoder(kind, batch, checkpoint, bundle)
    encoder.encode(texts[:batch], is_query=False)
    start = time.perf_counter()
    encoder.encode(texts, is_query=False)
    seconds = time.perf_counter() - start
    return {"encoder": kind, "graph": graph, "batch": batch, "dataset": dataset, "docs": len(texts),
            **({"arena": arena} if kind == "onnx" else {}),
            "docs_per_s": round(len(texts) / seconds, 2), "peak_rss_gb": round(vm_hwm_bytes() / 1e9, 3)}


def _shown(path: Path) -> str:
    """`path` as results may record it: relative to the working folder, else from its `artifacts`
    folder on (committed results must not name one machine's folders)."""
    from uniret.utils.files import shown_path

    shown = shown_path(path, Path.cwd())
    parts = Path(shown).parts
    if Path(shown).is_absolute() and "artifacts" in parts:
        return str(Path(*parts[parts.index("artifacts"):]))
    return shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 16])
    parser.add_argument("--docs", type=int, default=192)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--encoders", nargs="+", default=["torch", "onnx"], choices=["torch", "onnx"])
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--arena", nargs="+", default=["on"], choices=["on", "pattern", "off", "shrink"],
                        help="ONNX Runtime memory settings of the onnx rows (on: uniret's)")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("lab/results/encoding_batch.json"))
    parser.add_argument("--child", nargs=3, metavar=("ENCODER", "BATCH", "ARENA"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child[0], int(args.child[1]), args.checkpoint, args.bundle, args.data, args.docs,
                                 args.dataset, args.child[2])))
        return 0
    rows = []
    for round_no in range(1, args.rounds + 1):
        runs = [(kind, batch, arena) for kind in args.encoders for batch in args.batches
                for arena in (args.arena if kind == "onnx" else ["on"])]
        for kind, batch, arena in runs:
            cmd = [sys.executable, __file__, "--checkpoint", str(args.checkpoint), "--bundle", str(args.bundle),
                   "--data", str(args.data), "--dataset", args.dataset, "--docs", str(args.docs),
                   "--child", kind, str(batch), arena]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{kind} batch {batch} arena {arena} failed:\n{done.stderr[-2000:]}")
            row = {"round": round_no, **json.loads(done.stdout.strip().splitlines()[-1])}
            print(json.dumps(row), flush=True)
            rows.append(row)
    from uniret.utils.files import atomic_write_json

    atomic_write_json(args.out, {"checkpoint": _shown(args.checkpoint), "bundle": _shown(args.bundle),
                                 "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
