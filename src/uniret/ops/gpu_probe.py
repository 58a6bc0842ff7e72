"""The GPU check's first seconds: does this machine have what the check needs? (scripts/gpu_check.sh)

Prints one line of versions, then fails fast (exit 2) with one clear line when the kit is missing,
a package the check imports is missing, or torch sees no CUDA device (unless --allow-cpu). Only the
standard library until torch is imported, so a missing package is named, not a traceback.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

CANNOT_RUN = 2
# import name -> distribution: what the check imports (the CPU dry run's blocker proves nothing else is needed)
REQUIRED = {"torch": "torch", "transformers": "transformers", "tokenizers": "tokenizers", "safetensors": "safetensors",
            "numpy": "numpy", "scipy": "scipy", "onnx": "onnx", "onnxruntime": "onnxruntime",
            "onnxscript": "onnxscript", "yaml": "pyyaml", "numba": "numba", "threadpoolctl": "threadpoolctl"}
# the device machines' image, as the device tool's KINDS.md lists it (2026-11-17): what a dry run may import
GPU_MACHINE_PACKAGES = frozenset("""
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe
matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy
peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments
pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist
python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six sortedcontainers
statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm
tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope
triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl
zipp""".split())


def missing_modules(required: dict[str, str] | None = None) -> list[str]:
    """'module (distribution)' for each required module this Python cannot find."""
    return [f"{mod} ({dist})" for mod, dist in (required or REQUIRED).items() if not _findable(mod)]


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a finder that refuses the name (the dry run's stand-in for an absent package)
        return False


def kit_problem(kit: Path, dataset: str) -> str | None:
    """Why `kit` cannot feed the check (None when it can)."""
    needed = [kit / "kit.json", kit / "data" / dataset, kit / "backbones"]
    absent = [str(p) for p in needed if not p.exists()]
    if absent:
        return (f"the kit is incomplete ({', '.join(absent)} missing): make it with `make gpu-kit` and carry "
                f"{kit.name} (docs/gpu.md)")
    return None


def probe(kit: Path, dataset: str, allow_cpu: bool) -> tuple[int, str]:
    """(exit status, message): 0 and the versions line, or CANNOT_RUN and what is missing."""
    problem = kit_problem(kit, dataset)
    if problem:
        return CANNOT_RUN, f"gpu-probe: {problem}"
    missing = missing_modules()
    if missing:
        return CANNOT_RUN, (f"gpu-probe: missing here: {', '.join(missing)}; carry their wheels in the kit "
                            "(make gpu-kit GPU_KIT_ARGS='--wheel NAME==VERSION', docs/gpu.md)")
    import torch

    found = []
    for dist in dict.fromkeys(REQUIRED.values()):
        try:
            found.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            found.append(f"{dist} ?")
    line = f"gpu-probe: python {platform.python_version()}, " + ", ".join(found)
    if not torch.cuda.is_available():
        if allow_cpu:
            return 0, line + "; no CUDA device: DRY RUN on the CPU"
        return CANNOT_RUN, (f"{line}\ngpu-probe: no CUDA device: torch {torch.__version__} (CUDA build "
                            f"{torch.version.cuda or 'none'}) sees no GPU; pass --allow-cpu for a dry run")
    return 0, line + f"; CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}"


def main(argv: Sequence[str] | None = None) -> int:
    """The probe's command line: --kit, --dataset, --allow-cpu."""
    p = argparse.ArgumentParser(prog="gpu-probe", description=__doc__.split("\n\n")[0])
    p.add_argument("--kit", default=".gpu-kit")
    p.add_argument("--dataset", default="scifact")
    p.add_argument("--allow-cpu", action="store_true")
    args = p.parse_args(argv)
    rc, message = probe(Path(args.kit), args.dataset, args.allow_cpu)
    print(message, file=sys.stderr if rc else sys.stdout, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
