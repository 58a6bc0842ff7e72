"""`make gpu-kit`: what the GPU check (uniret.ops.gpu_check) needs on a machine with no network,
small enough to travel with the repository in one device-tool call (64 MiB; docs/gpu.md).

Made on a CPU machine with the project's venv, into one git-ignored folder (default .gpu-kit/):
  backbones/<alias>/  the two pretrained backbones (minilm, splade-tiny), packed: configs and
                      tokenizers (large files xz-compressed), weights float16 with each value's high
                      bytes xz-compressed and low bytes stored as they are (lossless for float16).
                      minilm keeps only the word-embedding rows of the tokens its data can produce
                      (--keep-all-rows keeps all); the other rows are refilled with the kept rows'
                      mean, so every text of the kit's data meets its true float16 embedding
  data/<dataset>/     a slice of the dataset in BEIR layout (--max-docs, default 1000 documents)
  wheels/             wheels the GPU machine lacks (none by default: gpu_probe checks what it has)
  kit.json            what is inside, the size of each part, of the repository and of the whole call
`python3 -m uniret.ops.gpu_kit unpack --kit .gpu-kit --out DIR` (numpy and the standard library
only, on the GPU machine) writes DIR/backbones/<alias>/model.safetensors and DIR/kit.json;
scripts/gpu_check.sh runs it before the check.
"""

from __future__ import annotations

import argparse
import json
import logging
import lzma
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

log = logging.getLogger("uniret.gpu_kit")

DEFAULT_WHEELS: tuple[str, ...] = ()  # faiss-cpu (18 MiB) does not fit: the mine stage then searches exactly with numpy
# the device machines of this workplace take 64 MiB of working tree per call (device tool's README)
CARRY_LIMIT_MIB = 64
TARGET_MIB = 48  # repository + kit, with margin under the limit (issue 60)
DEFAULT_MAX_DOCS = 1000
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
MODEL_SUFFIXES = (".json", ".txt", ".model")  # configs, vocabularies, tokenizers: no weights besides ours
COMPRESS_FROM = 64 * 1024  # bytes: tokenizer.json and vocab.txt travel xz-compressed
WEIGHTS = "model.safetensors"
PACK_INDEX, PACK_HIGH, PACK_LOW, PACK_ROWS = "weights.json", "weights.hi.xz", "weights.lo", "rows.i32"
PRUNED_ALIASES = ("minilm",)  # no MLM head reads its embeddings: splade-tiny's tied decoder needs every row
EMBEDDINGS_SUFFIX = "word_embeddings.weight"
DTYPES = {"F16": ("float16", 2), "F32": ("float32", 4), "I64": ("int64", 8), "I32": ("int32", 4)}


def folder_mib(path: Path) -> float:
    """Bytes under `path` in MiB."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def tree_mib(repo: Path) -> float | None:
    """MiB of what the device tool sends besides carried paths: tracked and untracked-not-ignored files."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo,
                                capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    files = {repo / name for name in listed.decode().split("\0") if name}
    return sum(f.stat().st_size for f in files if f.is_file() and not f.is_symlink()) / 2**20


def kept_rows(tokenizer, texts: Iterable[str]) -> list[int]:
    """Token ids any of `texts` (untruncated) or a special token produces, sorted."""
    ids = set(tokenizer.all_special_ids)
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == 512:
            ids.update(i for row in tokenizer(batch, add_special_tokens=True)["input_ids"] for i in row)
            batch = []
    if batch:
        ids.update(i for row in tokenizer(batch, add_special_tokens=True)["input_ids"] for i in row)
    return sorted(ids)


def pack_backbone(alias: str, out: Path, rows: Sequence[int] | None = None) -> Path:
    """The installed backbone `alias` packed under `out/alias` (module doc); `rows`: the word-embedding
    rows kept (None: all)."""
    import numpy as np
    import torch
    from safetensors.torch import load_file

    from uniret.models.backbones import resolve_backbone

    source = Path(resolve_backbone(alias))
    if not (source / WEIGHTS).is_file():
        raise FileNotFoundError(f"{source}: backbone {alias!r} has no {WEIGHTS}")
    target = out / alias
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for item in source.iterdir():
        if item.is_file() and item.suffix in MODEL_SUFFIXES:
            if item.stat().st_size >= COMPRESS_FROM:
                (target / f"{item.name}.xz").write_bytes(lzma.compress(item.read_bytes(), preset=9))
            else:
                shutil.copy2(item, target / item.name)
    names = {torch.float16: "F16", torch.float32: "F16", torch.bfloat16: "F16", torch.int64: "I64", torch.int32: "I32"}
    index: dict = {"format": 1, "tensors": [], "pruned": None}
    blobs = []
    for name, tensor in load_file(str(source / WEIGHTS)).items():
        dtype = names[tensor.dtype]
        if dtype == "F16":
            tensor = tensor.to(torch.float16)
        entry = {"name": name, "dtype": dtype, "shape": list(tensor.shape)}
        if rows is not None and name.endswith(EMBEDDINGS_SUFFIX):
            keep = np.asarray(rows, dtype=np.int32)
            tensor = tensor[torch.from_numpy(keep.astype(np.int64))]
            (target / PACK_ROWS).write_bytes(keep.tobytes())
            index["pruned"] = {"tensor": name, "rows_kept": int(keep.size), "rows": entry["shape"][0],
                               "others": "mean of the kept rows"}
        blobs.append(tensor.contiguous().numpy().tobytes())
        entry["nbytes"] = len(blobs[-1])
        index["tensors"].append(entry)
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    # float16's high byte (sign, exponent) compresses to about 40%; its low byte not at all
    (target / PACK_HIGH).write_bytes(lzma.compress(raw[1::2].tobytes(), preset=6))
    (target / PACK_LOW).write_bytes(raw[0::2].tobytes())
    (target / PACK_INDEX).write_text(json.dumps(index, indent=1), encoding="utf-8")
    return target


def write_safetensors(path: Path, tensors: Sequence[tuple[str, str, list[int], bytes]]) -> Path:
    """A safetensors file of (name, dtype code, shape, raw bytes) written with the standard library."""
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for *_, data in tensors:
            f.write(data)
    return path


def unpack_backbone(packed: Path, target: Path) -> Path:
    """A packed backbone folder (pack_backbone) back into a plain model folder at `target`."""
    import numpy as np

    target.mkdir(parents=True, exist_ok=True)
    for item in packed.iterdir():
        if item.name in (PACK_INDEX, PACK_HIGH, PACK_LOW, PACK_ROWS):
            continue
        if item.suffix == ".xz":
            (target / item.stem).write_bytes(lzma.decompress(item.read_bytes()))
        else:
            shutil.copy2(item, target / item.name)
    index = json.loads((packed / PACK_INDEX).read_text(encoding="utf-8"))
    high = np.frombuffer(lzma.decompress((packed / PACK_HIGH).read_bytes()), dtype=np.uint8)
    low = np.frombuffer((packed / PACK_LOW).read_bytes(), dtype=np.uint8)
    if high.size != low.size:
        raise ValueError(f"{packed}: {PACK_HIGH} and {PACK_LOW} differ in length: a damaged kit, make it again")
    raw = np.empty(high.size * 2, dtype=np.uint8)
    raw[0::2], raw[1::2] = low, high
    pruned = index.get("pruned") or {}
    tensors, start = [], 0
    for entry in index["tensors"]:
        data = raw[start:start + entry["nbytes"]].tobytes()
        start += entry["nbytes"]
        if entry["name"] == pruned.get("tensor"):
            kept = np.frombuffer(data, dtype=np.float16).reshape(-1, entry["shape"][1])
            full = np.empty(entry["shape"], dtype=np.float16)
            full[:] = kept.astype(np.float32).mean(axis=0).astype(np.float16)
            full[np.frombuffer((packed / PACK_ROWS).read_bytes(), dtype=np.int32)] = kept
            data = full.tobytes()
        tensors.append((entry["name"], entry["dtype"], entry["shape"], data))
    return write_safetensors(target / WEIGHTS, tensors)


def unpack_kit(kit: Path, out: Path) -> Path:
    """Every packed backbone of `kit` as a model folder under `out`/backbones, kit.json beside it; returns
    `out`/backbones (what $UNIRET_BACKBONES names)."""
    info = kit / "kit.json"
    if not info.is_file():
        raise FileNotFoundError(f"{kit}: no kit.json; make the kit here with `make gpu-kit` and carry it (docs/gpu.md)")
    backbones = out / "backbones"
    shutil.rmtree(backbones, ignore_errors=True)
    for alias in json.loads(info.read_text(encoding="utf-8"))["backbones"]:
        unpack_backbone(kit / "backbones" / alias, backbones / alias)
    shutil.copy2(info, out / "kit.json")
    return backbones


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


def build_kit(data_root: Path, dataset: str, out: Path, wheels: Sequence[str], max_docs: int | None = DEFAULT_MAX_DOCS,
              prune: bool = True, repo: Path | None = None) -> dict:
    """Write the kit into `out` (see module doc); returns kit.json's content."""
    from uniret.config.sections import SliceConfig
    from uniret.data.beir import BeirDataset
    from uniret.data.slicing import write_slice
    from uniret.models.backbones import ALIASES, BACKBONES_ENV, load_tokenizer
    from uniret.utils.envvars import temporary_env
    from uniret.utils.files import atomic_write_json

    out.mkdir(parents=True, exist_ok=True)
    source = BeirDataset(data_root / dataset, dataset)
    shutil.rmtree(out / "data", ignore_errors=True)
    sliced = write_slice(source, out / "data" / dataset, SliceConfig(max_queries=None, max_docs=max_docs, seed=13))
    texts = [d.contents for d in sliced.iter_corpus()] + list(sliced.queries().values())
    shutil.rmtree(out / "backbones", ignore_errors=True)
    with temporary_env({BACKBONES_ENV: ""}):  # copy from the installed packages, never from a kit
        for alias in ALIASES:
            rows = kept_rows(load_tokenizer(alias), texts) if prune and alias in PRUNED_ALIASES else None
            pack_backbone(alias, out / "backbones", rows)
    shutil.rmtree(out / "wheels", ignore_errors=True)
    names = download_wheels(wheels, out / "wheels")
    parts = {name: round(folder_mib(out / name), 2) for name in ("backbones", "data", "wheels") if (out / name).exists()}
    pruned = {alias: json.loads((out / "backbones" / alias / PACK_INDEX).read_text())["pruned"] for alias in ALIASES}
    kit = {"dataset": dataset, "max_docs": max_docs, "docs": sum(1 for _ in sliced.iter_corpus()),
           "backbones": list(ALIASES), "weights": "float16", "pruned": {k: v for k, v in pruned.items() if v},
           "wheels": names, "mib": parts, "total_mib": round(sum(parts.values()), 2)}
    tree = tree_mib(repo or Path(__file__).resolve().parents[3])
    if tree is not None:
        kit.update(tree_mib=round(tree, 2), travel_mib=round(tree + kit["total_mib"], 2))
    kit.update(limit_mib=CARRY_LIMIT_MIB, target_mib=TARGET_MIB)
    atomic_write_json(out / "kit.json", kit)
    return kit


def main(argv: Sequence[str] | None = None) -> int:
    """Build the kit (or `unpack` one); prints its size per part and fails when one call cannot carry it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if argv[:1] == ["unpack"]:
        p = argparse.ArgumentParser(prog="gpu-kit unpack", description="unpack a kit's backbones (GPU machine)")
        p.add_argument("--kit", default=".gpu-kit")
        p.add_argument("--out", required=True)
        args = p.parse_args(argv[1:])
        try:
            print(f"gpu-kit: backbones unpacked into {unpack_kit(Path(args.kit), Path(args.out))}")
        except FileNotFoundError as exc:
            print(f"gpu-kit unpack: {exc}", file=sys.stderr)
            return 2
        return 0
    p = argparse.ArgumentParser(prog="gpu-kit", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="data root holding the dataset (BEIR layout)")
    p.add_argument("--dataset", default="scifact")
    p.add_argument("--out", default=".gpu-kit")
    p.add_argument("--max-docs", type=int, default=DEFAULT_MAX_DOCS, help="documents kept (0: the whole corpus)")
    p.add_argument("--wheel", action="append", default=None, help="a requirement to download as a wheel (repeatable)")
    p.add_argument("--keep-all-rows", action="store_true", help="keep every word-embedding row of minilm (+20 MiB)")
    args = p.parse_args(argv)
    kit = build_kit(Path(args.data), args.dataset, Path(args.out), args.wheel or list(DEFAULT_WHEELS),
                    max_docs=args.max_docs or None, prune=not args.keep_all_rows)
    print(json.dumps(kit, indent=2))
    travel = kit.get("travel_mib", kit["total_mib"])
    if travel > CARRY_LIMIT_MIB:
        print(f"gpu-kit: {travel} MiB (repository + kit) is more than one device-tool call carries "
              f"({CARRY_LIMIT_MIB} MiB): cut the data (--max-docs) or the wheels", file=sys.stderr)
        return 1
    if travel > TARGET_MIB:
        print(f"gpu-kit: note: {travel} MiB travels, above the {TARGET_MIB} MiB target (margin under {CARRY_LIMIT_MIB})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
