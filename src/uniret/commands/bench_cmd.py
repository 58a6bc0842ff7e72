"""`uniret bench`: speed and size benchmarks of a bundle -> results/bench/bench.{json,md}."""

from __future__ import annotations

import argparse

from uniret.commands.outputs import output_argument


def _bench(args: argparse.Namespace) -> int:
    if args.dag_stage:
        from uniret.cli import run_stage_command

        return run_stage_command(args, "bench")
    from uniret.bench.runner import run_from_args

    return run_from_args(args)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="latency/QPS per mode, torch vs ONNX encoders, index sizes, top-N curve, HTTP serving",
        description="Benchmarks of one bundle, every figure from one run on the same queries "
                    "(params section `bench`); writes bench.json and bench.md with machine and versions.",
    )
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    p.add_argument("--profile", default=None, help="params profile (default: $UNIRET_PROFILE, then params.yaml)")
    p.add_argument("--data", default=None, help="data root with BEIR folders (default: $UNIRET_DATA, params, ../shared/data)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--bundle", default=None, help="bundle folder (default: artifacts/index/bundle, else production)")
    src.add_argument("--registry", default=None, help="registry root: benchmark its production bundle")
    p.add_argument("--artifacts", default=None, help="artifacts folder (default: $UNIRET_ARTIFACTS, then ./artifacts)")
    p.add_argument("--checkpoint", default=None,
                   help="torch checkpoint for the torch-vs-ONNX figures (default: the one named in the bundle manifest)")
    output_argument(p, "--out", kind="folder", default=None, help="output folder (default: bench.out_dir)")
    p.add_argument("--skip", action="append", default=[], choices=["modes", "encoders", "sizes", "top_n", "http", "growth"],
                   help="leave a section out (repeatable); it is recorded as skipped")
    p.add_argument("--only", choices=["growth"], default=None,
                   help="run one section alone: growth writes growth.{json,md,png} (the served mode on synthetic "
                        "corpora of params bench.growth.sizes; the run to 1M docs peaks at ~16 GB of RAM and takes 12-18 min "
                        "on 2 cores) and replaces the growth section of a bench.json already in --out")
    p.add_argument("--stage", dest="dag_stage", action="store_true",
                   help="run the DAG's bench stage instead: a short run (params bench.stage) on artifacts/index/bundle "
                        "-> artifacts/bench/bench.json, the figures the gate budgets")
    p.set_defaults(func=_bench)
