"""`uniret pipeline compile|run --local|submit|schedule`: the DAG as a Kubeflow pipeline."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from uniret.commands.outputs import output_argument

if TYPE_CHECKING:
    from uniret.config.params import Params
    from uniret.config.pipeline import PipelineConfig


def _stages(value: str | None) -> list[str] | None:
    """--stages a,b,c (or space separated) -> list; None: the whole DAG."""
    if not value:
        return None
    return [s for s in value.replace(",", " ").split() if s]


def _config(args: argparse.Namespace) -> tuple[Params, PipelineConfig]:
    """The params file (profile from --profile where the action has one) and its `pipeline:` section."""
    from uniret.config import load_params

    params = load_params(args.params, args.profile)
    return params, params.section("pipeline")


def _compile(args: argparse.Namespace) -> int:
    from uniret.kubeflow.project import COMPILED, compile_pipeline, project_root

    root = project_root()
    _, cfg = _config(args)
    out = compile_pipeline(cfg, args.output or root / COMPILED, _stages(args.stages))
    print(f"compiled {cfg.name} -> {out}")
    return 0


def _image(args: argparse.Namespace) -> int:
    _, cfg = _config(args)
    if args.kustomize:
        from uniret.kubeflow.images import write_kustomization_images

        changed = write_kustomization_images(args.kustomize, cfg)
        print(f"{args.kustomize}: images {'updated' if changed else 'already current'}")
        return 0
    print(cfg.image if args.variant == "gpu" else cfg.serving_image)
    return 0


def _cronjob(args: argparse.Namespace) -> int:
    from uniret.kubeflow.cronjob import render_cronjob, write_cronjob

    cfg = _config(args)[1]
    if not args.write:  # print the render; the file is left as it is
        with open(args.path, encoding="utf-8") as fh:
            print(render_cronjob(fh.read(), cfg, args.path), end="")
    else:
        state = "updated" if write_cronjob(args.path, cfg) else "already current"
        print(f"{args.path}: schedule {state}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from uniret.config.loader import ConfigError
    from uniret.kubeflow.local import run_local
    from uniret.kubeflow.project import project_root

    if not args.local:
        raise ConfigError("`uniret pipeline run` runs locally only: add --local (use `submit --host` for a cluster)")
    root = project_root()
    params, cfg = _config(args)
    run = run_local(
        root, cfg, workdir=args.workdir or root, profile=params.profile, stages=_stages(args.stages),
        recipe=args.recipe or "", data_version=args.data_version, gate_overrides=args.gate_overrides,
        params_path=args.params, data=args.data, image=args.image,
    )
    print(f"local run finished: {', '.join(run.manifests) or 'no stage outputs'}; kfp outputs in {run.outputs}")
    return 0


def _package(args: argparse.Namespace, cfg: PipelineConfig, tmp: Path) -> Path:
    """--package as given, else a fresh compile of the current code (never a stale YAML)."""
    from uniret.kubeflow.client import package_exists
    from uniret.kubeflow.project import compile_pipeline

    if args.package:
        return package_exists(args.package)
    return compile_pipeline(cfg, tmp / "retrain.yaml", _stages(args.stages))


def _arguments(args: argparse.Namespace, cfg: PipelineConfig) -> dict[str, str]:
    """The run parameters sent to the server; a bad --gate-overrides fails here, not in a pod."""
    from uniret.kubeflow.client import run_arguments
    from uniret.kubeflow.task import parse_overrides

    parse_overrides(args.gate_overrides, "gate_overrides")
    return run_arguments(args.recipe or "", args.run_profile or cfg.profile, args.data_version,
                         args.gate_overrides, args.workdir or cfg.mount_path)


def _submit(args: argparse.Namespace) -> int:
    from uniret.kubeflow.client import connect, submit

    _, cfg = _config(args)
    arguments = _arguments(args, cfg)  # bad input fails here, before the server is contacted
    with tempfile.TemporaryDirectory(prefix="uniret-kfp-") as tmp:
        package = _package(args, cfg, Path(tmp))
        name = args.run_name or f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
        done = submit(connect(args.host, args.namespace), package, arguments, args.experiment or cfg.experiment, name)
    print(f"submitted run {done.run_id} (experiment {done.experiment_id}) to {args.host}")
    return 0


def _schedule(args: argparse.Namespace) -> int:
    from uniret.kubeflow.client import connect, normalize_cron, schedule

    _, cfg = _config(args)
    arguments = _arguments(args, cfg)  # bad input fails here, before the server is contacted
    cron = normalize_cron(args.cron or cfg.cron)
    with tempfile.TemporaryDirectory(prefix="uniret-kfp-") as tmp:
        package = _package(args, cfg, Path(tmp))
        done = schedule(connect(args.host, args.namespace), package, arguments, args.experiment or cfg.experiment,
                        args.job_name or f"{cfg.name}-nightly", cron, cfg.name)
    print(f"scheduled recurring run {done.recurring_run_id} (pipeline version {done.pipeline_version_id}) "
          f"on {args.host}")
    return 0


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", default="params.yaml", help="params file with the `pipeline:` section")
    p.add_argument("--stages", default=None, help="comma-separated stages (default: the whole DAG)")


def _add_run_values(p: argparse.ArgumentParser) -> None:
    """The pipeline's run parameters besides profile and workdir (their defaults differ per action)."""
    p.add_argument("--recipe", default=None, help="recipe: unifier, led, clear, aggretriever (default: params model.recipe)")
    p.add_argument("--data-version", default="", help="data version: folder data/<version> in the workdir")
    p.add_argument("--gate-overrides", default="{}", help='JSON object merged over params gate:, e.g. \'{"min_score": 0.3}\'')


def _add_server_params(p: argparse.ArgumentParser) -> None:
    _add_run_values(p)
    p.add_argument("--profile", dest="run_profile", default=None,
                   help="profile the stages use (default: params pipeline.profile)")
    p.add_argument("--workdir", default=None, help="shared workdir (default: params pipeline.mount_path)")
    p.add_argument("--package", default=None, help="compiled YAML to send (default: compile the current code)")
    p.add_argument("--host", required=True, help="Kubeflow Pipelines API URL, e.g. http://localhost:8080")
    p.add_argument("--namespace", default=None, help="Kubeflow namespace (multi-user deployments)")
    p.add_argument("--experiment", default=None, help="experiment name (default: params pipeline.experiment)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register `pipeline` and its actions."""
    p = sub.add_parser("pipeline", help="Kubeflow pipeline: compile, run locally, submit, schedule",
                       description="The DAG as a Kubeflow pipeline (uniret.kubeflow.pipeline).")
    psub = p.add_subparsers(dest="pipeline_command", metavar="<action>", required=True)

    c = psub.add_parser("compile", help="compile the pipeline to YAML (pipelines/retrain.yaml)")
    _add_common(c)
    output_argument(c, "--output", kind="replaced", default=None, help="YAML path (default: pipelines/retrain.yaml)")
    c.set_defaults(func=_compile, profile=None)

    i = psub.add_parser("image", help="print an image tag from params pipeline: (used by `make image`)")
    i.add_argument("--params", default="params.yaml")
    i.add_argument("--variant", choices=["gpu", "cpu"], default="gpu",
                   help="gpu: the pipeline's image (Dockerfile.gpu); cpu: serving's (Dockerfile)")
    i.add_argument("--kustomize", default=None, metavar="KUSTOMIZATION",
                   help="instead of printing, write both tags into this kustomization.yaml's `images:`")
    i.set_defaults(func=_image, profile=None)

    k = psub.add_parser("cronjob", help="render pipeline.cron and pipeline.profile into the opt-in CronJob "
                        "(k8s/overlays/cronjob/cronjob.yaml)")
    k.add_argument("--params", default="params.yaml")
    k.add_argument("--path", default="k8s/overlays/cronjob/cronjob.yaml",
                   help="the CronJob manifest (default: k8s/overlays/cronjob/cronjob.yaml)")
    k.add_argument("--write", action="store_true", help="rewrite the file in place (else print the render)")
    k.set_defaults(func=_cronjob, profile=None)
    r = psub.add_parser("run", help="run the pipeline here with kfp.local (SubprocessRunner, or DockerRunner)")
    _add_common(r)
    r.add_argument("--local", action="store_true", help="run with kfp.local (required)")
    r.add_argument("--profile", default=None, help="profile: tiny, cpu, gpu (default: $UNIRET_PROFILE, then params)")
    r.add_argument("--data", default=None, help="data root with BEIR folders (default: resolution of `uniret <stage>`)")
    r.add_argument("--workdir", default=None,
                   help="shared workdir; artifacts go to <workdir>/artifacts (default: the project folder)")
    r.add_argument("--image", default=None,
                   help="run every task in this image (kfp.local's DockerRunner on $DOCKER_HOST, else on a "
                        "podman service started for the run), e.g. $(uniret pipeline image --variant cpu)")
    _add_run_values(r)
    r.set_defaults(func=_run)

    s = psub.add_parser("submit", help="start one run on a Kubeflow Pipelines server")
    _add_common(s)
    _add_server_params(s)
    s.add_argument("--run-name", default=None, help="run name (default: <pipeline>-<UTC time>)")
    s.set_defaults(func=_submit, profile=None)

    sc = psub.add_parser("schedule", help="create a recurring (nightly) run on a Kubeflow Pipelines server")
    _add_common(sc)
    _add_server_params(sc)
    sc.add_argument("--cron", default=None, help="cron, 6 fields with seconds first (5 fields get '0 ' prepended); "
                    "default: params pipeline.cron")
    sc.add_argument("--job-name", default=None, help="recurring run name (default: <pipeline>-nightly)")
    sc.set_defaults(func=_schedule, profile=None)
