"""`make gpu-kit`: what the GPU check (uniret.ops.gpu_check) needs on a machine with no network.

Made on a CPU machine with the project's venv, into one git-ignored folder (default .gpu-kit/):
  backbones/<alias>/  the two pretrained backbones (minilm, splade-tiny) as plain model folders,
                      weights stored float16 unless --fp32 (half the bytes; models load them as
                      float32, so only the starting weights' rounding differs); found through
                      $UNIRET_BACKBONES (uniret.models.backbones)
  data/<dataset>/     the dataset in BEIR layout (whole, or --max-docs documents)
  wheels/             wheels the GPU machine lacks (default faiss-cpu), fetched by pip download
                      for CPython 3.12 manylinux x86_64, no dependencies
  kit.json            what is inside and its size
scripts/gpu_check.sh installs the wheels into a private folder and runs the check from the kit.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger("uniret.gpu_kit")

DEFAULT_WHEELS = ("faiss-cpu==1.15.1",)
# the device machines of this workplace take 64 MiB of working tree per call (docs/gpu.md)
CARRY_LIMIT_MIB = 64
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
MODEL_SUFFIXES = (".json", ".txt", ".model")  # configs, vocabularies, tokenizers: no weights besides ours
WEIGHTS = "model.safetensors"


def folder_mib(path: Path) -> float:
    """Bytes under `path` in MiB."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def copy_backbone(alias: str, out: Path, fp16: bool) -> Path:
    """The installed backbone `alias` as a model folder under `out` (weights float16 when `fp16`)."""
    import torch
    from safetensors.torch import load_file, save_file

    from uniret.models.backbones import resolve_backbone

    source = Path(resolve_backbone(alias))
    if not (source / WEIGHTS).is_file():
        raise FileNotFoundError(f"{source}: backbone {alias!r} has no {WEIGHTS}")
    target = out / alias
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for item in source.iterdir():
        if item.is_file() and item.suffix in MODEL_SUFFIXES:
            shutil.copy2(item, target / item.name)
    tensors = load_file(str(source / WEIGHTS))
    if fp16:
        tensors = {k: v.to(torch.float16) if v.is_floating_point() else v for k, v in tensors.items()}
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(target / WEIGHTS), metadata={"format": "pt"})
    return target


def download_wheels(specs: Sequence[str], out: Path, python_version: str = "3.12") -> list[str]:
    """pip download each spec (binary, no dependencies) for CPython `python_version` manylinux x86_64."""
    if not specs:
        return []
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
           "--python-version", python_version, "--implementation", "cp", "-d", str(out)]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    subprocess.run([*cmd, *specs], check=True)
    return sorted(p.name for p in out.glob("*.whl"))


def build_kit(data_root: Path, dataset: str, out: Path, wheels: Sequence[str], fp16: bool = True,
              max_docs: int | None = None) -> dict:
    """Write the kit into `out` (see module doc); returns kit.json's content."""
    from uniret.config.sections import SliceConfig
    from uniret.data.beir import BeirDataset
    from uniret.data.slicing import write_slice
    from uniret.models.backbones import ALIASES, BACKBONES_ENV
    from uniret.utils.envvars import temporary_env
    from uniret.utils.files import atomic_write_json

    out.mkdir(parents=True, exist_ok=True)
    with temporary_env({BACKBONES_ENV: ""}):  # copy from the installed packages, never from a kit
        for alias in ALIASES:
            copy_backbone(alias, out / "backbones", fp16)
    source = BeirDataset(data_root / dataset, dataset)
    shutil.rmtree(out / "data" / dataset, ignore_errors=True)
    write_slice(source, out / "data" / dataset, SliceConfig(max_queries=None, max_docs=max_docs, seed=13))
    shutil.rmtree(out / "wheels", ignore_errors=True)
    names = download_wheels(wheels, out / "wheels")
    parts = {name: round(folder_mib(out / name), 1) for name in ("backbones", "data", "wheels") if (out / name).exists()}
    kit = {"dataset": dataset, "max_docs": max_docs, "backbones": list(ALIASES),
           "weights": "float16" if fp16 else "float32", "wheels": names, "mib": parts,
           "total_mib": round(sum(parts.values()), 1)}
    atomic_write_json(out / "kit.json", kit)
    return kit


def main(argv: Sequence[str] | None = None) -> int:
    """Build the kit; prints its size per part and whether it fits one device-tool call."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    p = argparse.ArgumentParser(prog="gpu-kit", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="data root holding the dataset (BEIR layout)")
    p.add_argument("--dataset", default="scifact")
    p.add_argument("--out", default=".gpu-kit")
    p.add_argument("--max-docs", type=int, default=None, help="documents kept (default: the whole corpus)")
    p.add_argument("--wheel", action="append", default=None,
                   help=f"a requirement to download as a wheel (repeatable; default {' '.join(DEFAULT_WHEELS)})")
    p.add_argument("--no-wheels", action="store_true", help="download no wheel (faiss then absent on the GPU machine)")
    p.add_argument("--fp32", action="store_true", help="keep the backbones' float32 weights (twice the bytes)")
    args = p.parse_args(argv)
    wheels = [] if args.no_wheels else (args.wheel or list(DEFAULT_WHEELS))
    kit = build_kit(Path(args.data), args.dataset, Path(args.out), wheels, fp16=not args.fp32, max_docs=args.max_docs)
    print(json.dumps(kit, indent=2))
    if kit["total_mib"] > CARRY_LIMIT_MIB - 4:  # the repository itself travels too (~3 MiB)
        print(f"note: {kit['total_mib']} MiB is more than one device-tool call carries ({CARRY_LIMIT_MIB} MiB with "
              "the repository): carry wheels/ and data/ in one call and backbones/ in the next (docs/gpu.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
