"""The GPU machine's Python, imitated on a CPU machine for the GPU check's dry run (scripts/gpu_dry_run.sh).

On PYTHONPATH, this makes every installed distribution that the device machines' image lacks
(uniret.ops.gpu_probe.GPU_MACHINE_PACKAGES) unimportable, so a dry run that passes imported nothing
the GPU machine misses; at exit it writes the third-party modules imported to $GPU_DRY_RUN_MODULES.
What those packages need here stays importable: the versions differ (e.g. this huggingface_hub
imports httpx2), and the GPU machine's versions come with their own needs.
"""

import atexit
import importlib.abc
import importlib.metadata
import importlib.util
import os
import re
import sys
from pathlib import Path


def _norm(name):
    return name.lower().replace("_", "-").replace(".", "-")


def _machine_packages():
    # read from the file, not imported: `python -m uniret.ops.gpu_probe` must find it unimported
    path = Path(__file__).resolve().parents[2] / "src" / "uniret" / "ops" / "gpu_probe.py"
    spec = importlib.util.spec_from_file_location("_uniret_gpu_probe_list", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GPU_MACHINE_PACKAGES


def _closure(names):
    needs = {}
    for dist in importlib.metadata.distributions():
        reqs = [r for r in (dist.requires or []) if "extra ==" not in r and "extra==" not in r]
        needs[_norm(dist.metadata["Name"] or "")] = {_norm(re.match(r"[A-Za-z0-9_.\-]+", r).group(0)) for r in reqs}
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(needs.get(name, ()))
    return seen


_OWNERS = importlib.metadata.packages_distributions()
_ALLOWED = {_norm(n) for n in _machine_packages()} | {"uniret"}
_ALLOWED |= {_norm(n) for n in os.environ.get("GPU_KIT_WHEELS", "").split(",") if n}
_ALLOWED = _closure(_ALLOWED)
_ABSENT = {mod for mod, dists in _OWNERS.items() if not any(_norm(d) in _ALLOWED for d in dists)}
_ABSENT.discard("uniret")


class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _ABSENT:
            raise ModuleNotFoundError(f"No module named {name!r} (absent on the GPU machine)", name=name)
        return None


sys.meta_path.insert(0, _Absent())


@atexit.register
def _write_modules():
    out = os.environ.get("GPU_DRY_RUN_MODULES")
    if out:
        tops = sorted({m.split(".")[0] for m in list(sys.modules)} & set(_OWNERS))
        with open(out, "a", encoding="utf-8") as f:
            f.write(" ".join(f"{m}({','.join(sorted(set(_OWNERS[m])))})" for m in tops) + "\n")
