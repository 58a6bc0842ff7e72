"""Corpus encoding throughput (docs/s) per model x path x max length, with parity of the outputs.

    python -m uniret.bench.encoding --dataset scifact --docs 500 --max-lengths 128 256 \
        --out .cache/bench/encoding

Paths: `torch_before` (the reference per-row vocabulary max, `reference_vocab_max`), `torch_after`
(the blockwise vocabulary max every caller now runs) and `onnx` (the exported document graph in
ONNX Runtime). Models are the untrained heads on the shipped backbones (speed does not depend on
training). Each cell also records the largest absolute difference of its outputs from
`torch_before`, so a faster path that changes results shows up in the same table. Figures are
reported, never asserted: the machine is shared. `encoding_section(...)` is the piece `uniret
bench` can call.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import tempfile
import time
from collections.abc import Sequence
from itertools import islice
from pathlib import Path

import numpy as np

from uniret.bench.machine import machine_info
from uniret.utils.files import atomic_write_json, atomic_write_text

log = logging.getLogger("uniret.bench")

JSON_FILE = "encoding.json"
MD_FILE = "encoding.md"
PATHS = ("torch_before", "torch_after", "onnx")
# name -> ModelConfig fields (the heads the cpu profile trains, on the shipped backbones)
MODELS = {
    "splade-tiny": {"arch": "splade", "backbone": "splade-tiny"},
    "unifier": {"arch": "unifier", "backbone": "splade-tiny"},
    "minilm": {"arch": "dense", "backbone": "minilm", "pooling": "mean", "normalize": True},
    "aggretriever": {"arch": "aggretriever", "backbone": "splade-tiny"},
}
WARMUP_DOCS = 4  # untimed first batch: allocator / ORT session warm-up is not per-document cost


def _torch_encoder(model, batch_size: int, max_length: int):
    from uniret.retrieval.encoding import TorchTextEncoder

    return TorchTextEncoder(model, model.tokenizer, batch_size, max_length, max_length)


def _timed(encoder, docs: Sequence[str], reference: bool):
    """(docs/s, EncodedTexts) of encoding `docs` once after a short warm-up."""
    from uniret.models.pooling import reference_vocab_max

    with reference_vocab_max() if reference else contextlib.nullcontext():
        encoder.encode(list(docs[:WARMUP_DOCS]), is_query=False)
        start = time.perf_counter()
        out = encoder.encode(list(docs), is_query=False)
        seconds = time.perf_counter() - start
    return len(docs) / seconds, out


def _max_diff(a, b) -> float | None:
    """Largest absolute difference of the dense and sparse outputs (None when nothing to compare)."""
    diffs = []
    if a.dense is not None and b.dense is not None:
        diffs.append(float(np.abs(a.dense - b.dense).max()))
    if a.sparse is not None and b.sparse is not None:
        diffs.append(float(abs(a.sparse - b.sparse).max()))
    return max(diffs) if diffs else None


def bench_model(name: str, fields: dict, docs: Sequence[str], max_length: int, batch_size: int,
                paths: Sequence[str], threads: int | None, export_cfg) -> dict:
    """docs/s and parity (max |diff| vs torch_before) of one model at one max length, per path."""
    import torch

    from uniret.config.models import ModelConfig
    from uniret.export.onnx import export_encoders
    from uniret.models.factory import build_model
    from uniret.retrieval.onnx_encoder import OnnxEncoder

    torch.manual_seed(0)
    model = build_model(ModelConfig(**fields)).eval()
    has_vocab_max = fields["arch"] in ("splade", "unifier", "aggretriever")
    cells: dict[str, dict] = {}
    reference = None
    for path in paths:
        if path == "torch_before" and not has_vocab_max:
            cells[path] = {"same_as": "torch_after"}  # no vocabulary max: both paths run the same code
            continue
        log.info("encoding bench: %s, max_length %d, %s", name, max_length, path)
        if path == "onnx":
            with tempfile.TemporaryDirectory() as tmp:
                export_encoders(model, model.tokenizer, tmp, export_cfg, max_length, max_length)
                encoder = OnnxEncoder(tmp, model.tokenizer, batch_size, max_length, max_length, threads)
                rate, out = _timed(encoder, docs, reference=False)
        else:
            rate, out = _timed(_torch_encoder(model, batch_size, max_length), docs, path == "torch_before")
        reference = out if reference is None else reference
        cells[path] = {"docs_per_s": round(rate, 2), "max_abs_diff_vs_first": _max_diff(reference, out)}
    return cells


def encoding_section(docs: Sequence[str], max_lengths: Sequence[int], batch_size: int,
                     models: dict[str, dict] | None = None, paths: Sequence[str] = PATHS,
                     threads: int | None = None, export_cfg=None) -> dict:
    """{"rows": [...], settings}: one row per model x max length with docs/s per path."""
    import torch

    from uniret.config.retrieval import ExportConfig

    if threads:
        torch.set_num_threads(threads)
    export_cfg = export_cfg or ExportConfig()
    rows = []
    for max_length in max_lengths:
        for name, fields in (models or MODELS).items():
            cells = bench_model(name, fields, docs, max_length, batch_size, paths, threads, export_cfg)
            rows.append({"model": name, "max_length": max_length, **cells})
    return {"rows": rows, "docs": len(docs), "batch_size": batch_size, "paths": list(paths),
            "torch_threads": torch.get_num_threads(), "onnx_threads": threads}


def render_markdown(section: dict) -> str:
    """The docs/s table (speed-up of torch_after over torch_before in brackets)."""
    paths = section["paths"]
    lines = [
        "# Corpus encoding throughput",
        "",
        f"{section['docs']} documents, batch {section['batch_size']}, torch threads {section['torch_threads']}, "
        f"ORT threads {section['onnx_threads']}. docs/s; max |diff| of the outputs vs the first path "
        "in brackets (omitted when identical).",
        "",
        "| model | max_length | " + " | ".join(paths) + " |",
        "|---|---|" + "---|" * len(paths),
    ]
    for row in section["rows"]:
        cells = []
        for path in paths:
            cell = row.get(path) or {}
            if "same_as" in cell:
                cells.append(f"= {cell['same_as']}")
            elif "docs_per_s" in cell:
                diff = cell.get("max_abs_diff_vs_first")
                cells.append(f"{cell['docs_per_s']:g}" + (f" ({diff:.1e})" if diff else ""))
            else:
                cells.append("-")
        lines.append(f"| {row['model']} | {row['max_length']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_section(section: dict, out_dir: Path) -> tuple[Path, Path]:
    """encoding.json and encoding.md in `out_dir` (atomic writes)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out_dir / JSON_FILE, section)
    atomic_write_text(out_dir / MD_FILE, render_markdown(section))
    return out_dir / JSON_FILE, out_dir / MD_FILE


def main(argv: list[str] | None = None) -> int:
    """CLI entry point (see the module docstring)."""
    from uniret.config import load_params
    from uniret.data.beir import BeirDataset
    from uniret.data.roots import resolve_data_root

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--profile", default=None)
    p.add_argument("--data", default=None, help="data root (else $UNIRET_DATA / params data.root)")
    p.add_argument("--dataset", default="scifact")
    p.add_argument("--docs", type=int, default=500)
    p.add_argument("--max-lengths", type=int, nargs="+", default=[128, 256])
    p.add_argument("--models", nargs="+", choices=sorted(MODELS), default=list(MODELS))
    p.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    p.add_argument("--batch-size", type=int, default=None, help="default: params encoding.batch_size")
    p.add_argument("--threads", type=int, default=None, help="torch and ORT intra-op threads")
    p.add_argument("--out", default=".cache/bench/encoding")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    params = load_params(args.params, args.profile)
    index_cfg = params.section("index")
    dataset = BeirDataset(resolve_data_root(args.data, params.section("data").root) / args.dataset, args.dataset)
    docs = [d.contents for d in islice(dataset.iter_corpus(), args.docs)]
    section = encoding_section(docs, args.max_lengths, args.batch_size or params.section("encoding").batch_size,
                               {m: MODELS[m] for m in args.models}, args.paths, args.threads, index_cfg.export)
    section.update(dataset=args.dataset, machine=machine_info())
    json_path, md_path = write_section(section, Path(args.out))
    print(render_markdown(section))
    log.info("wrote %s and %s", json_path, md_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
