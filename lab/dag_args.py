"""The arguments every lab script that reads a DAG's artifacts takes, and the stage context they give."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_dag_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """--params, --profile, --data and --artifacts, with the stages' defaults."""
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--data", default=None, help="data root (default: as the stages resolve it)")
    parser.add_argument("--artifacts", default="artifacts", help="the DAG's artifacts folder")
    return parser


def dag_context(args: argparse.Namespace):
    """The stage context of those arguments (uniret.runtime.make_context)."""
    from uniret.runtime import make_context

    return make_context(Path(args.params), args.profile, args.data, Path(args.artifacts))
