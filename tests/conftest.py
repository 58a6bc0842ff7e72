"""Shared test fixtures: the real shared data, the repo's params.yaml, tiny-profile contexts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

# Side effects stay in a temp dir; nothing reaches a hub or the W&B cloud.
_SANDBOX = Path(tempfile.mkdtemp(prefix="uniret-tests-"))
for key, value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OPENAI_API_KEY": "unused-by-uniret",
    "WANDB_MODE": "offline",
    "WANDB_DIR": str(_SANDBOX / "wandb"),
    "WANDB_DATA_DIR": str(_SANDBOX / "wandb-data"),
    "WANDB_CACHE_DIR": str(_SANDBOX / "wandb-cache"),
    "WANDB_CONFIG_DIR": str(_SANDBOX / "wandb-config"),
    "MPLCONFIGDIR": str(_SANDBOX / "mpl"),
    "MPLBACKEND": "Agg",
    "IR_DATASETS_HOME": str(_SANDBOX / "ir_datasets"),
    "HF_HOME": str(_SANDBOX / "hf"),
    "DVC_SITE_CACHE_DIR": str(_SANDBOX / "dvc-site"),
    # OpenMP threads sleep when idle instead of spinning: two xdist workers' torch and faiss spinning on 2
    # cores ran two tiny warmups in 32 s against 13.6 s passive (10.3 s alone), E58
    "OMP_WAIT_POLICY": "PASSIVE",
}.items():
    os.environ.setdefault(key, value)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def requirement_pins():
    """pins(path) -> {package: version} of a requirements or constraints file's `name==version` lines,
    names normalised as pip compares them (lower case, runs of -_. as one -)."""
    def pins(path: Path) -> dict[str, str]:
        out = {}
        for line in path.read_text().splitlines():
            line = line.split("#")[0].strip()
            if "==" in line:
                name, version = line.split("==")
                out[re.sub(r"[-_.]+", "-", name.strip().lower())] = version.strip()
        return out

    return pins


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "scifact" / "corpus.jsonl").is_file():
        pytest.fail(f"{SHARED_DATA} is missing: tests read the real collections from ../shared/data")
    return SHARED_DATA


# The container tests (podman and the CPU image) skip on a developer's machine that lacks them; CI
# proves the images, so there (CI set) a missing prerequisite is a failure. .ci/run installs podman
# and builds the image before the suite.
CONTAINER_TESTS_HOW = "to run them: sudo docker/install-podman.sh, then make test-images"


def in_ci() -> bool:
    """True when $CI says this is a CI run (CI=true, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def container_prerequisite_missing(reason: str) -> NoReturn:
    """A container test cannot run for `reason`: a failure under CI, else a skip saying how to run it."""
    if in_ci():
        pytest.fail(f"{reason}: under CI the container tests must run "
                    "(.ci/run installs podman and builds the image before the tests)", pytrace=False)
    pytest.skip(f"{reason}; {CONTAINER_TESTS_HOW}")


_container_tests: dict[str, str] = {}  # node id -> outcome of every test that uses podman
CONTAINER_TEST = ("container_test", True)  # on the reports of a podman test: xdist's controller collects nothing


def pytest_collection_modifyitems(config, items) -> None:
    """Under pytest-xdist (`make test`: 2 workers, --dist loadscope) a module's tests go to one worker, so its
    module fixtures are built once (costly session fixtures once per run: `once_per_run`); modules with a
    slow test come first, so the longest start while the other worker still has work left."""
    _container_tests.update({item.nodeid: "not run" for item in items if "podman" in item.fixturenames})
    if hasattr(config, "workerinput"):  # an xdist worker: each collects, the controller hands out the modules
        slow = {item.path for item in items if item.get_closest_marker("slow")}
        items.sort(key=lambda item: item.path not in slow)  # stable: collection order within each part


def pytest_runtest_logreport(report) -> None:
    if (report.nodeid in _container_tests or CONTAINER_TEST in report.user_properties) and (
            report.when == "call" or not report.passed):
        _container_tests[report.nodeid] = report.outcome if report.when != "teardown" else "error"


def pytest_terminal_summary(terminalreporter) -> None:
    """Which container tests ran: CI's log shows that the image was tested, not skipped."""
    if not _container_tests:
        return
    terminalreporter.section("container tests (podman, the CPU image of this tree)")
    for nodeid, outcome in _container_tests.items():
        terminalreporter.write_line(f"{outcome:8} {nodeid}")


@pytest.hookimpl(tryfirst=True)  # before any fixture: a missing podman fails in the session fixture's setup
def pytest_runtest_setup(item) -> None:
    """A test using podman says so on its reports (the summary above lists it, with or without xdist)."""
    if "podman" in item.fixturenames:
        item.user_properties.append(CONTAINER_TEST)


@pytest.fixture(scope="session")
def podman() -> list[str]:
    """The podman command (a failure under CI, else a skip, when it is not installed)."""
    exe = shutil.which("podman")
    if exe is None:
        container_prerequisite_missing("podman is not installed")
    return [exe]


@pytest.fixture(scope="session")
def podman_env(podman) -> dict[str, str]:
    """The environment podman runs in: $CONTAINERS_CONF is the project's (runc, no default ulimits)."""
    from uniret.kubeflow.containers import CONTAINERS_CONF_ENV, containers_conf

    env = dict(os.environ)
    conf = containers_conf(REPO)
    if conf:
        env[CONTAINERS_CONF_ENV] = conf
    return env


@pytest.fixture(scope="session")
def cpu_image(podman, podman_env) -> str:
    """The tag of the CPU image built from this tree (`make image`; params.yaml pipeline.serving_image)."""
    from uniret.config import load_params
    from uniret.kubeflow.images import stale_image_reason

    tag = load_params(REPO / "params.yaml").section("pipeline").serving_image
    if subprocess.run([*podman, "image", "exists", tag], env=podman_env, timeout=60).returncode != 0:
        container_prerequisite_missing(f"image {tag} is not built here")
    stale = stale_image_reason(podman, tag, REPO, podman_env)
    if stale:
        container_prerequisite_missing(stale)  # an image of other code would test that code, not this tree
    return tag


@pytest.fixture
def tiny_ctx(tmp_path, shared_data):
    """A StageContext with the tiny profile, the repo's params.yaml and artifacts in tmp_path."""
    from uniret.runtime import make_context

    return make_context(REPO / "params.yaml", "tiny", str(shared_data), tmp_path / "artifacts")


def once_per_run(tmp_path_factory, name: str, build) -> Path:
    """`build(folder) -> path` run once for the whole pytest run, its result shared read-only. Alone, in a
    fresh temp folder; under pytest-xdist, in the run's temp folder (the workers' common parent): the first
    worker to need it builds it while the others wait on a file lock, then all read the same path."""
    from filelock import FileLock

    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return build(tmp_path_factory.mktemp(name))
    folder = tmp_path_factory.getbasetemp().parent / name
    done = folder.with_suffix(".done")  # holds the result's path inside the folder; written last
    with FileLock(str(folder.with_suffix(".lock"))):
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            done.write_text(str(build(folder).relative_to(folder)))
    return folder / done.read_text()


@pytest.fixture(scope="session")
def tiny_bundle(tmp_path_factory, shared_data) -> Path:
    """A real index bundle of the tiny SciFact slice: validated slice (stand-in for the validate stage),
    the bm25 stage, a factory UnifieR checkpoint (SPLADE-tiny, untrained heads) as warmup, the index stage.
    Built once per run (`once_per_run`): tests read it and copy what they change."""
    return once_per_run(tmp_path_factory, "bundle", lambda folder: _build_tiny_bundle(folder / "artifacts", shared_data))


def _build_tiny_bundle(artifacts: Path, shared_data: Path) -> Path:
    import copy

    from uniret.config import Params
    from uniret.config.models import ModelConfig
    from uniret.data.beir import BeirDataset
    from uniret.data.slicing import write_slice
    from uniret.models.factory import build_model, save_model
    from uniret.runtime import MANIFEST, VALIDATED_DATA, StageContext, make_context
    from uniret.stages import bm25, index
    from uniret.utils.files import atomic_write_json

    base = make_context(REPO / "params.yaml", "tiny", str(shared_data), artifacts)
    raw = copy.deepcopy(base.params.raw)
    raw["data"]["eval_datasets"] = ["scifact"]
    # the graphs the product ships (the dynamo exporter, the int8 query graph tried): every test reading this
    # bundle serves, quantizes and exports those; the tiny profile's own runs skip both for time (E49, E59)
    raw["index"]["profiles"]["tiny"]["export"].update(dynamo=True, quantize={"enabled": True})
    ctx = StageContext(Params(raw=raw, profile="tiny", path=base.params.path), base.data_root, base.artifacts)
    data = ctx.params.section("data")
    write_slice(BeirDataset(shared_data / "scifact", "scifact"), ctx.stage_dir("validate") / VALIDATED_DATA / "scifact",
                data.slice)
    atomic_write_json(ctx.stage_dir("validate") / MANIFEST, {"stage": "validate", "fixture": True})
    bm25.run(ctx)
    save_model(build_model(ModelConfig(arch="unifier", backbone="splade-tiny", query_max_length=32, doc_max_length=96)),
               ctx.stage_dir("warmup") / "model")
    index.run(ctx)
    return ctx.stage_dir("index") / "bundle"


@pytest.fixture
def gate_artifacts(tmp_path, tiny_bundle) -> Path:
    """artifacts/ for a gate run over the tiny bundle: its bm25 and index stages and validated slice,
    with a validate record saying SciFact's files are today's."""
    import json

    from uniret.runtime import MANIFEST, VALIDATED_DATA

    source = tiny_bundle.parents[1]
    out = tmp_path / "artifacts"
    (out / "validate").mkdir(parents=True)
    os.symlink(source / "validate" / VALIDATED_DATA, out / "validate" / VALIDATED_DATA)
    (out / "validate" / MANIFEST).write_text(json.dumps({"stage": "validate", "inputs": {"scifact": "today"}}))
    for stage in ("bm25", "index"):
        os.symlink(source / stage, out / stage)
    return out


@pytest.fixture
def dvc_project(shared_data):
    """make(dest, edit) -> a temp git + dvc repo holding dvc.yaml, params.yaml (tiny profile, the shared
    data; `edit(raw)` changes more), the recipe files and a copy of the sources, as `dvc repro` needs them."""
    import shutil
    import subprocess
    import sys

    import yaml

    def make(repo: Path, edit=None) -> Path:
        repo.mkdir(parents=True)
        for name in ("dvc.yaml", "params.yaml"):
            shutil.copy(REPO / name, repo / name)
        for tree in ("src", "recipes", "expected"):
            shutil.copytree(REPO / tree, repo / tree, ignore=shutil.ignore_patterns("__pycache__"))
        params = yaml.safe_load((repo / "params.yaml").read_text())
        params["profile"] = "tiny"
        params["data"]["root"] = str(shared_data)
        if edit is not None:
            edit(params)
        (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        subprocess.run([str(Path(sys.executable).parent / "dvc"), "init", "-q"], cwd=repo, check=True)
        shutil.copy(REPO / DVCIGNORE, repo / DVCIGNORE)  # over dvc init's empty one
        return repo

    return make


TINY_DAG_DATASETS = ["scifact"]  # the whole-DAG runs evaluate SciFact only, to keep each within minutes


@pytest.fixture(scope="session")
def tiny_dag_params(repo_root, shared_data):
    """() -> the repo's params.yaml as the whole-DAG tests run it (the shared data, SciFact only), a fresh copy."""
    import yaml

    def make() -> dict:
        params = yaml.safe_load((repo_root / "params.yaml").read_text())
        params["data"]["root"] = str(shared_data)
        params["data"]["eval_datasets"] = list(TINY_DAG_DATASETS)
        params["evaluate"]["expected_scores"] = [str(repo_root / p) for p in params["evaluate"]["expected_scores"]]
        return params

    return make


@pytest.fixture(scope="session")
def tiny_dag_by_dvc(tmp_path_factory, repo_root, tiny_dag_params) -> tuple[Path, str]:
    """`dvc repro evaluate` in a temp git repo (a copy of dvc.yaml, src/, the tiny_dag_params): the whole
    tiny DAG up to evaluate under DVC, run once per run (`once_per_run`). (repo, dvc's output). The e2e
    test compares its scores with its kfp.local run's, the DAG-in-image test with its run inside the image."""
    repo = once_per_run(tmp_path_factory, "dvc-dag", lambda folder: _dvc_repro_tiny_dag(folder, repo_root, tiny_dag_params()))
    return repo, (repo.parent / DVC_OUTPUT).read_text()


DVC_OUTPUT = "dvc-output.txt"  # beside the repo: what `dvc repro evaluate` printed
DVCIGNORE = ".dvcignore"  # the repository's: caches and bytecode are not stage dependencies


def _dvc_repro_tiny_dag(folder: Path, repo_root: Path, params: dict) -> Path:
    import sys

    import yaml

    repo = folder / "repo"
    repo.mkdir()
    shutil.copy(repo_root / "dvc.yaml", repo / "dvc.yaml")
    for tree in ("src", "recipes", "expected"):
        shutil.copytree(repo_root / tree, repo / tree, ignore=shutil.ignore_patterns("__pycache__"))
    params["profile"] = "tiny"  # `uniret <stage>` under dvc takes the profile from params.yaml
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, timeout=120)
    for args in (["init", "-q"], ["repro", "evaluate"]):
        proc = subprocess.run([str(bin_dir / "dvc"), *args], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=1200)
        assert proc.returncode == 0, f"dvc {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        if args[0] == "init":
            shutil.copy(repo_root / DVCIGNORE, repo / DVCIGNORE)  # over dvc init's empty one
    (folder / DVC_OUTPUT).write_text(proc.stdout + proc.stderr)
    return repo
