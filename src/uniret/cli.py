"""`uniret` command line: one subcommand per DAG stage plus operational commands.

Only argument plumbing lives here: every stage subcommand calls `uniret.stages.<name>.run`, the
same function dvc.yaml and the Kubeflow components call.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from uniret import __version__
from uniret.core.dag import STAGE_HELP, STAGES

# Operational commands: module -> it defines `add_parser(subparsers)` setting `func(args) -> int`.
COMMAND_MODULES = [
    "uniret.commands.data_cmd",
    "uniret.commands.params_cmd",
    "uniret.commands.registry_cmd",
    "uniret.commands.canary_cmd",
    "uniret.commands.nightly_cmd",
    "uniret.commands.pipeline_cmd",
    "uniret.commands.serve_cmd",
    "uniret.commands.bench_cmd",
    "uniret.commands.recipes_cmd",
    "uniret.commands.export_cmd",
    "uniret.commands.significance_cmd",
    "uniret.commands.results_cmd",
    "uniret.commands.gate_study_cmd",
    "uniret.commands.simulate_cmd",
    "uniret.commands.loop_cmd",
]

# stages run by the command of the same name with --stage (`uniret bench --stage`): the command
# keeps the full report, the stage is its short run on the candidate bundle
COMMAND_STAGES = {"bench"}


# Stage subcommands with flags of their own: module -> it defines `extend_parser(parser)`.
STAGE_EXTENSIONS = {"evaluate": "uniret.commands.evaluate_cmd", "feedback": "uniret.commands.feedback_cmd"}


def add_common_args(p: argparse.ArgumentParser) -> None:
    """Arguments every stage (and most commands) share."""
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    p.add_argument("--profile", default=None, help="profile: tiny, cpu, gpu (default: $UNIRET_PROFILE, then params.yaml)")
    p.add_argument("--data", default=None, help="data root with BEIR folders (default: $UNIRET_DATA, params, ../shared/data)")
    p.add_argument("--artifacts", default=None, help="artifacts folder (default: $UNIRET_ARTIFACTS, then ./artifacts)")


def run_stage_command(args: argparse.Namespace, stage: str | None = None) -> int:
    """Run `stage` (default: the subcommand's) with the common arguments."""
    from uniret.runtime import make_context
    from uniret.stages import run_stage

    ctx = make_context(args.params, args.profile, args.data, args.artifacts)
    result = run_stage(stage or args.stage, ctx)
    error = result.get("error") if isinstance(result, dict) else None
    if error:  # the stage wrote its outputs, then recorded a failure (promote: a corpus refresh that failed)
        print(f"uniret {stage or args.stage}: error: {error}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="uniret",
        description="Retrain, evaluate, gate and promote hybrid (learned-sparse + dense) retrievers.",
        epilog="DAG: " + " -> ".join(STAGES[:-1]) + " (+ report). Run `uniret <command> --help` for details.",
    )
    parser.add_argument("--version", action="version", version=f"uniret {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="debug logging, and the traceback behind an error message")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for stage in STAGES:
        if stage in COMMAND_STAGES:
            continue
        p = sub.add_parser(stage, help=STAGE_HELP[stage], description=STAGE_HELP[stage])
        add_common_args(p)
        p.set_defaults(func=run_stage_command, stage=stage)
        if stage in STAGE_EXTENSIONS:  # extra flags of a stage subcommand (they set its func)
            importlib.import_module(STAGE_EXTENSIONS[stage]).extend_parser(p)
    for mod in COMMAND_MODULES:
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:  # a broken import inside the module is a bug: surface it
                raise
            logging.getLogger("uniret.cli").warning("command module %s is not installed; skipped", mod)
            continue
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose + 1, 2),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from uniret.utils.parent_watch import watch_nightly

    watch_nightly()  # under `uniret nightly`: exit when it is gone (uniret.utils.parent_watch)
    from uniret.core.errors import format_error, is_user_error

    try:
        check = getattr(args, "check_outputs", None)  # the one output rule, set by uniret.commands.outputs
        if check is not None:
            check(args)  # before any work
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - user errors get one clear message, bugs a traceback
        if is_user_error(exc) and not args.verbose:
            print(f"uniret {args.command}: error: {format_error(exc)}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    raise SystemExit(main())
