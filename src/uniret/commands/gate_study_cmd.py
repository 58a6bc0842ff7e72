"""`uniret gate-study add|run`: the gate's error rates on real retrains (uniret.ops.gate_study)."""

from __future__ import annotations

import argparse
from pathlib import Path

from uniret.commands.outputs import output_argument

DEFAULT_ROOT = "results/gate"


def _add(args: argparse.Namespace) -> int:
    from uniret.ops.gate_study import add_candidate

    entry = add_candidate(Path(args.root), args.name, args.kind, args.what, Path(args.evaluated), args.system,
                          args.metric)
    print(f"{args.root}: {args.name} ({entry['kind']}): {entry['what']}")
    return 0


def _run(args: argparse.Namespace) -> int:
    import dataclasses

    from uniret.config.params import load_params
    from uniret.ops.gate_study import render, study, write_study
    from uniret.registry.gate import resolve_gate_config

    params = load_params(args.params, args.profile)
    cfg = resolve_gate_config(params)
    cfg = dataclasses.replace(cfg, regression_resamples=args.resamples)
    doc = study(Path(args.root), cfg, params.section("data").train_dataset)
    write_study(Path(args.root), doc)
    print(render(doc), end="")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate-study", help="the gate's false blocks and misses on real retrains, both rules",
                       description="Gate every pair of evaluated candidates (equal retrains, made-worse and better "
                                   "ones) with the point rule and the paired rule, and simulate the smallest loss each "
                                   "catches 95%% of the time. Raw files and results live under --root.")
    verbs = p.add_subparsers(dest="verb", metavar="<verb>", required=True)
    add = verbs.add_parser("add", help="copy one candidate's per-query scores from an evaluate output")
    add.add_argument("name", help="the candidate's name, e.g. seed-2")
    add.add_argument("--kind", required=True, choices=["equal", "worse", "better"])
    add.add_argument("--what", required=True, help="how it was made, e.g. 'continual seed 2 from the same warmup'")
    add.add_argument("--evaluated", default="artifacts/evaluate", help="an evaluate output (default: artifacts/evaluate)")
    add.add_argument("--system", default="hybrid_fast", help="its system there (default: hybrid_fast)")
    add.add_argument("--metric", default="ndcg@10", help="the gate's metric (default: ndcg@10)")
    output_argument(add, "--root", kind="folder", default=DEFAULT_ROOT, help=f"the study folder (default: {DEFAULT_ROOT})")
    add.set_defaults(func=_add)
    run = verbs.add_parser("run", help="gate every pair under both rules; write study.json and study.md")
    output_argument(run, "--root", kind="folder", default=DEFAULT_ROOT, help=f"the study folder (default: {DEFAULT_ROOT})")
    run.add_argument("--params", default="params.yaml", help="the gate's settings (default: params.yaml)")
    run.add_argument("--profile", default=None, help="profile (default: $UNIRET_PROFILE, then params.yaml)")
    run.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples per paired test (default: 2000)")
    run.set_defaults(func=_run)
