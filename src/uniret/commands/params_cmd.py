"""`uniret params check`: load and type-check every section of a params file."""

from __future__ import annotations

import argparse


def _check(args: argparse.Namespace) -> int:
    from uniret.config import load_params

    params = load_params(args.params, args.profile)
    names = params.check_all()
    print(f"{params.path}: profile {params.profile!r}: sections OK: {', '.join(names)}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("params", help="check params.yaml", description="Type-check params.yaml for a profile.")
    psub = p.add_subparsers(dest="params_command", metavar="<action>", required=True)
    c = psub.add_parser("check", help="load every section with the chosen profile")
    c.add_argument("--params", default="params.yaml")
    c.add_argument("--profile", default=None)
    c.set_defaults(func=_check)
