"""What a Kubeflow component runs in its container: one stage on the shared workdir.

The workdir (the PVC mount on Kubernetes, a local folder under kfp.local) holds everything the
stages share: `artifacts/` (stage outputs), `params.yaml` (relative params paths such as the
registry resolve next to it, so they land on the volume too) and optionally `data/` with one
folder per data version. Components pass only small values; the stage function reads and
writes the workdir exactly as `uniret <stage>` does.

The promote task also records the night's outcome in the registry's nightly.json and sends it to
the webhook (params `notify`), as `uniret nightly` does: a blocked Kubeflow night is visible to
monitoring and on-call, not a green run that tells no one.

Every task runs its stage under the nightly lock (params `nightly.lock_file`, on the volume), the
lock `uniret nightly` holds for a whole run: a CronJob nightly and a Kubeflow task never write the
workdir at once. A task that finds the lock held waits up to `pipeline.lock_wait_s`, then fails
naming the holder.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniret.config.loader import ConfigError
from uniret.config.paths import resolve_path
from uniret.config.recipe_files import RECIPES_DIR
from uniret.core.errors import DataError, DataProblem, StageFailed
from uniret.core.jsonio import read_json
from uniret.runtime import MANIFEST, StageContext, make_context
from uniret.stages import run_stage
from uniret.utils.locks import LockHeld, file_lock

log = logging.getLogger("uniret.kubeflow")

PARAMS_ENV = "UNIRET_PARAMS"  # params.yaml copied into a fresh workdir (default: ./params.yaml)
DATA_VERSION_ENV = "UNIRET_DATA_VERSION"
RECIPE_ENV = "UNIRET_RECIPE"
RECIPE_SECTION = "model"  # params `model.recipe` names the active recipe
WORKDIR_PARAMS = "params.yaml"
WORKDIR_DATA = "data"
WORKDIR_ARTIFACTS = "artifacts"
LOCK_POLL_S = 5.0  # how often a task waiting for the nightly lock tries again


@dataclass
class TaskRequest:
    """The run parameters a component receives from the pipeline."""

    stage: str
    workdir: str
    profile: str
    recipe: str = ""  # "": params model.recipe
    data_version: str = ""
    gate_overrides: str = ""  # JSON object merged over params `gate:` (thresholds)


def workdir_params(workdir: Path) -> Path:
    """The workdir's params.yaml; a fresh workdir is seeded from $UNIRET_PARAMS or ./params.yaml and
    the recipe files beside it (recipes/)."""
    target = workdir / WORKDIR_PARAMS
    if target.is_file():
        return target
    source = Path(os.environ.get(PARAMS_ENV) or WORKDIR_PARAMS)
    if not source.is_file():
        raise ConfigError(f"{target}: no params.yaml in the workdir and none at {source} (set ${PARAMS_ENV})")
    workdir.mkdir(parents=True, exist_ok=True)
    recipes = source.parent / RECIPES_DIR
    if recipes.is_dir() and not (workdir / RECIPES_DIR).is_dir():
        staging = workdir / f".{RECIPES_DIR}.{os.getpid()}.tmp"
        shutil.copytree(recipes, staging, dirs_exist_ok=True)
        try:
            os.replace(staging, workdir / RECIPES_DIR)  # params.yaml (below) is written last
        except OSError:  # a concurrent first task placed them already
            shutil.rmtree(staging, ignore_errors=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)  # atomic: concurrent first tasks never see half a file
    log.info("seeded %s from %s", target, source)
    return target


def data_root(workdir: Path, data_version: str) -> str | None:
    """$UNIRET_DATA, else <workdir>/data/<version>, else <workdir>/data, else None (params decide)."""
    if os.environ.get("UNIRET_DATA"):
        return None  # make_context reads the variable itself
    base = workdir / WORKDIR_DATA
    if not base.is_dir():
        return None
    if data_version:
        versioned = base / data_version
        if not versioned.is_dir():
            raise DataError(DataProblem(versioned, None, None, f"data version {data_version!r} not found in the workdir"))
        return str(versioned)
    return str(base)


def parse_overrides(text: str, name: str) -> dict[str, Any]:
    """A JSON object given as a pipeline parameter; '' means no override."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"pipeline parameter {name}: invalid JSON at column {exc.colno}: {exc.msg}") from exc
    if not isinstance(value, dict):
        raise ConfigError(f"pipeline parameter {name}: expected a JSON object, got {type(value).__name__}")
    return value


def task_context(req: TaskRequest) -> StageContext:
    """The StageContext of one pipeline task, with the run's overrides applied."""
    workdir = Path(req.workdir).resolve()
    params_path = workdir_params(workdir)
    ctx = make_context(params_path, req.profile or None, data_root(workdir, req.data_version),
                       workdir / WORKDIR_ARTIFACTS)
    ctx.params = ctx.params.with_overrides("gate", parse_overrides(req.gate_overrides, "gate_overrides"))
    ctx.params.section("gate")  # a bad override fails here, naming the key, before any work
    if req.recipe:
        ctx.params = ctx.params.with_overrides(RECIPE_SECTION, {"recipe": req.recipe})
        ctx.params.section(RECIPE_SECTION)  # an unknown recipe fails here too
    return ctx


def active_recipe(ctx: StageContext) -> str:
    """The recipe this task trains with (params model.recipe after the run's override)."""
    return str(ctx.params.resolved(RECIPE_SECTION).get("recipe") or "")


@contextmanager
def nightly_lock(ctx: StageContext, wait_s: float, poll_s: float = LOCK_POLL_S) -> Iterator[Path]:
    """Hold the nightly lock (params nightly.lock_file) for the block, waiting up to `wait_s` for it;
    StageFailed naming the holder when it stays held."""
    path = resolve_path(ctx.params, ctx.params.section("nightly").lock_file)
    deadline = time.monotonic() + wait_s
    stack = ExitStack()
    while True:
        try:
            stack.enter_context(file_lock(path, blocking=False))
            break
        except LockHeld as exc:
            if time.monotonic() >= deadline:
                raise StageFailed(f"the nightly lock stayed held for {wait_s:g} s (pipeline.lock_wait_s): {exc}; "
                                  "a `uniret nightly` (the CronJob) or another task runs on this volume") from exc
            log.info("waiting for the nightly lock: %s", exc)
            time.sleep(min(poll_s, max(deadline - time.monotonic(), 0.0)))
    with stack:
        yield path


def run_task(req: TaskRequest) -> tuple[StageContext, dict[str, Any]]:
    """Run the stage of `req` on its workdir; return the context and the stage's manifest."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ctx = task_context(req)
    # Recorded for lineage: the stages, W&B and the registry read them from the environment.
    os.environ[RECIPE_ENV] = active_recipe(ctx)
    os.environ[DATA_VERSION_ENV] = req.data_version
    log.info("task %s: profile %s, recipe %r, data version %r, workdir %s", req.stage, ctx.profile,
             os.environ[RECIPE_ENV], req.data_version, req.workdir)
    with nightly_lock(ctx, ctx.params.section("pipeline").lock_wait_s):
        run_stage(req.stage, ctx)
    return ctx, read_json(ctx.stage_dir(req.stage) / MANIFEST)


def publish_manifest(req: TaskRequest, ctx: StageContext, manifest: dict[str, Any], artifact: Any) -> None:
    """Copy the stage manifest into its KFP artifact; scalar metrics become artifact metadata."""
    Path(artifact.path).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ctx.stage_dir(req.stage) / MANIFEST, artifact.path)
    artifact.metadata.update({
        "stage": req.stage,
        "profile": ctx.profile,
        "recipe": active_recipe(ctx),
        "data_version": req.data_version,
        "outputs": str(ctx.stage_dir(req.stage)),
    })
    for key, value in (manifest.get("metrics") or {}).items():
        if isinstance(value, (bool, int, float, str)):
            artifact.metadata[f"metrics.{key}"] = value


def check_upstream(stage: str, upstream: Any) -> None:
    """Stop before any work when the previous task left no manifest artifact: it failed.

    kfp.local's DockerRunner on podman cannot see a container's exit status (podman removes the
    container as it exits, kfp's wait then gets 404 and assumes success), so without this a stage
    would run after a failed one, on the stale outputs an earlier run left in the workdir.
    """
    if upstream is not None and not Path(upstream.path).is_file():
        raise StageFailed(f"task {stage}: the upstream task left no manifest at {upstream.path}: it failed")


def run_component(req: TaskRequest, manifest_artifact: Any, upstream: Any = None) -> StageContext:
    """Entry point of every component: check the upstream task, run the stage, publish its manifest."""
    check_upstream(req.stage, upstream)
    ctx, manifest = run_task(req)
    publish_manifest(req, ctx, manifest, manifest_artifact)
    error = (manifest.get("metrics") or {}).get("error")
    if req.stage == "promote" and not error:  # the night's outcome, as `uniret nightly` records and sends it
        from uniret.ops.nightly import promote_outcome, publish_outcome

        publish_outcome(ctx.params, promote_outcome(manifest["metrics"]))
    # (with an error the task fails below, and the run's exit handler records the failed night once)
    if error:  # the stage recorded its outputs, then a failure the run must show (a failed corpus refresh)
        raise StageFailed(f"task {req.stage}: {error} (see {ctx.stage_dir(req.stage)})")
    return ctx


def record_run_end(workdir: str, profile: str, state: str, error: str | None, job: str | None) -> bool:
    """The exit handler's work: a run whose final state is not SUCCEEDED is a failed night, recorded in
    the registry's nightly.json and sent to the webhook as `uniret nightly` does (exit 1); a run that
    succeeded was recorded by its promote task. Returns whether a failed night was recorded."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if state == "SUCCEEDED":
        log.info("run %s succeeded: its promote task recorded the night", job or "?")
        return False
    from uniret.config import load_params
    from uniret.ops.nightly import EXIT_FAILED, NightlyOutcome, publish_outcome

    params = load_params(workdir_params(Path(workdir).resolve()), profile or None)
    lines = (error or "").strip().splitlines()
    why = lines[-1][:300] if lines else "no error message"
    publish_outcome(params, NightlyOutcome(EXIT_FAILED, f"failed: Kubeflow run {job or '?'} ended {state}: {why}"))
    return True


def publish_evaluation(ctx: StageContext, metrics: Any, markdown: Any) -> int:
    """Log params `pipeline.ui_metrics` per dataset/system and macro from evaluate's metrics.json.

    metrics.md becomes a Markdown artifact. Returns how many values were logged (the Kubeflow UI
    shows them as the run's metrics).
    """
    stage_dir = ctx.stage_dir("evaluate")
    names = ctx.params.section("pipeline").ui_metrics
    doc = read_json(stage_dir / "metrics.json")
    count = 0
    groups = [(f"{ds}/", systems) for ds, systems in sorted((doc.get("datasets") or {}).items())]
    groups.append(("macro/", doc.get("macro") or {}))
    for prefix, systems in groups:
        for system, values in sorted(systems.items()):
            for name in names:
                if isinstance(values, dict) and isinstance(values.get(name), (int, float)):
                    metrics.log_metric(f"{prefix}{system}/{name}", float(values[name]))
                    count += 1
    if count == 0:
        log.warning("%s: none of %s found for any dataset/system", stage_dir / "metrics.json", names)
    Path(markdown.path).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(stage_dir / "metrics.md", markdown.path)
    return count


def publish_gate(ctx: StageContext, markdown: Any) -> bool:
    """The gate's decision (decision.json `passed`) and its decision.md as a Markdown artifact."""
    stage_dir = ctx.stage_dir("gate")
    path = stage_dir / "decision.json"
    decision = read_json(path)
    passed = decision.get("passed")
    if not isinstance(passed, bool):
        raise DataError(DataProblem(path, None, "passed", f"expected true/false, got {passed!r}"))
    Path(markdown.path).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(stage_dir / "decision.md", markdown.path)
    log.info("gate decision: %s", "PASSED" if passed else "BLOCKED")
    return passed


def figures_html(stage_dir: Path, title: str) -> str:
    """One self-contained HTML page with every PNG of `stage_dir` inlined (KFP's HTML viewer)."""
    parts = [f"<html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    pngs = sorted(stage_dir.glob("*.png"))
    for png in pngs:
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        parts.append(f"<figure><img alt='{html.escape(png.stem)}' src='data:image/png;base64,{data}'>"
                     f"<figcaption>{html.escape(png.name)}</figcaption></figure>")
    if not pngs:
        parts.append(f"<p>no figures in {html.escape(str(stage_dir))}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def publish_report(ctx: StageContext, markdown: Any, figures: Any) -> int:
    """report.md as a Markdown artifact and its PNG plots as one HTML artifact; returns #figures."""
    stage_dir = ctx.stage_dir("report")
    Path(markdown.path).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(stage_dir / "report.md", markdown.path)
    Path(figures.path).write_text(figures_html(stage_dir, "uniret regression report"), encoding="utf-8")
    return len(list(stage_dir.glob("*.png")))
