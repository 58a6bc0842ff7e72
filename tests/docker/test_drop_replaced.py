"""docker/drop-replaced.sh, which docker/build.sh runs after a build: the image a tag named before goes.

Real podman, with label-only images built FROM scratch (nothing to download or run). Skips without
podman, fails under CI (tests/conftest.py).
"""

from __future__ import annotations

import subprocess
import uuid

import pytest


@pytest.fixture
def build(podman, podman_env, tmp_path):
    """build(tag, n) -> the id of a FROM-scratch image labelled n=<n>, tagged <tag>; all removed after."""
    made: list[str] = []

    def go(tag: str, n: int) -> str:
        file = tmp_path / f"Containerfile.{n}"
        file.write_text(f"FROM scratch\nLABEL uniret.test.drop={n}\n")
        subprocess.run([*podman, "build", "-q", "-f", str(file), "-t", tag, str(tmp_path)], env=podman_env,
                       check=True, capture_output=True, timeout=120)
        made.append(tag)
        return inspect(podman, podman_env, tag)

    yield go
    for name in made:
        subprocess.run([*podman, "rmi", "--force", name], env=podman_env, capture_output=True, timeout=120)


def inspect(podman, env, ref: str) -> str:
    out = subprocess.run([*podman, "image", "inspect", "--format", "{{.Id}}", ref], env=env,
                         capture_output=True, text=True, timeout=60)
    return out.stdout.strip() if out.returncode == 0 else ""


def drop(repo_root, podman_env, old: str, tag: str) -> str:
    out = subprocess.run([str(repo_root / "docker" / "drop-replaced.sh"), old, tag],
                         env={**podman_env, "ENGINE": "podman"}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_replaced_image_goes_and_a_used_or_current_one_stays(repo_root, podman, podman_env, build):
    tag = f"localhost/uniret-test-drop-{uuid.uuid4().hex[:8]}:x"
    first = build(tag, 1)
    assert drop(repo_root, podman_env, first, tag) == ""  # the tag still names it: nothing to do
    assert inspect(podman, podman_env, first) == first

    second = build(tag, 2)
    assert second != first
    said = drop(repo_root, podman_env, first, tag)
    assert said.startswith(f"drop-replaced.sh: removed {first[:12]}")
    assert inspect(podman, podman_env, first) == "" and inspect(podman, podman_env, tag) == second

    # a container made from the old image keeps it (rmi without --force), and the build goes on
    container = f"uniret-test-drop-{uuid.uuid4().hex[:8]}"
    subprocess.run([*podman, "create", "--name", container, tag, "true"], env=podman_env, check=True,
                   capture_output=True, timeout=120)
    try:
        third = build(tag, 3)
        said = drop(repo_root, podman_env, second, tag)
        assert said.startswith(f"drop-replaced.sh: kept {second[:12]}") and "container" in said
        assert inspect(podman, podman_env, second) == second and inspect(podman, podman_env, tag) == third
    finally:
        subprocess.run([*podman, "rm", "--force", container], env=podman_env, capture_output=True, timeout=120)
        subprocess.run([*podman, "rmi", "--force", second], env=podman_env, capture_output=True, timeout=120)
