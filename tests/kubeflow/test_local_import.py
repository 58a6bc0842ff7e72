"""kfp.local must not mistake the project's docker/ folder (Dockerfiles) for the docker SDK."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
sys.path.insert(0, sys.argv[1])
import docker  # the project's docker/ folder, as an empty namespace package
assert getattr(docker, "__file__", None) is None, docker
from uniret.kubeflow.local import import_kfp_local
local = import_kfp_local()
from kfp.local import task_dispatcher
print("ok", local.SubprocessRunner.__name__, task_dispatcher._DOCKER_AVAILABLE)
"""


def test_kfp_local_imports_with_the_project_folder_on_sys_path(repo_root):
    # a fresh interpreter: this session may have imported kfp.local already
    out = subprocess.run([sys.executable, "-c", CODE, str(repo_root)], cwd=repo_root, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["ok", "SubprocessRunner", "False"]
