"""The project's docker/ folder (Containerfiles) cannot pass for the docker SDK that DockerRunner needs.

With the SDK installed (requirements.txt), a regular package anywhere on sys.path beats the
namespace package the docker/ folder would make, so kfp.local needs no import workaround.
"""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
sys.path.insert(0, sys.argv[1])  # the project folder first, as `python -m uniret` from it does
import docker
assert docker.__file__ and hasattr(docker, "DockerClient"), docker
from kfp import local
from kfp.local import task_dispatcher
print("ok", local.DockerRunner.__name__, task_dispatcher._DOCKER_AVAILABLE)
"""


def test_kfp_local_sees_the_docker_sdk_with_the_project_folder_on_sys_path(repo_root):
    # a fresh interpreter: this session may have imported kfp.local already
    out = subprocess.run([sys.executable, "-c", CODE, str(repo_root)], cwd=repo_root, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["ok", "DockerRunner", "True"]
