"""`uniret nightly`: one locked retraining run (refresh, dvc repro, gate, promote, report)."""

from __future__ import annotations

import argparse

EPILOG = """exit codes:
  0   promoted (or the candidate already is production)
  3   blocked: by the gate (see artifacts/gate/decision.md), or the candidate's content was
      rolled back before (`uniret registry status`; `uniret registry lift` allows it again)
  4   paused: every stage, the gate and the report ran, nothing was promoted
      (`uniret registry pause`, or params nightly.promote: false; `uniret registry resume`)
  1   failed (a command, a stage, or the report failed)
  75  another nightly run holds the lock (nothing was done; retry later)

A night that ends 3 or 4 refreshes the corpus (params nightly.refresh_corpus): today's documents
indexed with production's own model, checked (checksums, floors, latency) and promoted as
"corpus refresh of <version>"; the code stays 3 or 4, the summary says what the refresh did, and a
refresh that fails makes the night 1.

Commands run in the params file's folder, with $UNIRET_PROFILE and $UNIRET_ARTIFACTS set for them.
"""


def _nightly(args: argparse.Namespace) -> int:
    import dataclasses
    import sys

    from uniret.ops.nightly import run_nightly
    from uniret.runtime import make_context

    ctx = make_context(args.params, args.profile, args.data, args.artifacts)
    cfg = ctx.params.section("nightly")
    overrides = {}
    if args.refresh is not None:
        overrides["refresh_commands"] = args.refresh
    if args.repro is not None:
        overrides["repro_command"] = args.repro
    if args.no_report:
        overrides["report"] = False
    outcome = run_nightly(ctx, dataclasses.replace(cfg, **overrides), lock_file=args.lock_file)
    for step in outcome.steps:
        print(f"  {step}")
    print(f"nightly: {outcome.summary}", file=sys.stderr if outcome.code else sys.stdout)
    return outcome.code


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register `nightly`."""
    from uniret.cli import add_common_args

    p = sub.add_parser(
        "nightly",
        help="locked nightly run: refresh, dvc repro, gate, promote, report (exit 0/3/4/1/75)",
        description="Run the retraining DAG once under a lock: refresh commands (params nightly.refresh_commands, "
        "e.g. `dvc pull`), `dvc repro`, then read artifacts/gate/decision.json, promote when it passed "
        "(unless promotion is paused or a rollback rejected the candidate's content), and write the report.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_args(p)
    p.add_argument("--lock-file", default=None, help="lock file (default: params nightly.lock_file)")
    p.add_argument("--refresh", action="append", default=None, metavar="CMD",
                   help="refresh command, repeatable (default: params nightly.refresh_commands)")
    p.add_argument("--repro", default=None, metavar="CMD", help="DAG command (default: params nightly.repro_command)")
    p.add_argument("--no-report", action="store_true", help="skip the report stage")
    p.set_defaults(func=_nightly)
