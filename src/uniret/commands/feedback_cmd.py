"""`uniret feedback forget --client-id X`: the feedback stage's subcommand that removes a client's records.

`uniret feedback` alone is the DAG stage (uniret.stages.feedback).
"""

from __future__ import annotations

import argparse
import json


def _forget(args: argparse.Namespace) -> int:
    from uniret.runtime import make_context
    from uniret.stages.feedback import forget

    ctx = make_context(args.params, args.profile, args.data, args.artifacts)
    print(json.dumps(forget(ctx, args.client_id), indent=2))
    return 0


def extend_parser(p: argparse.ArgumentParser) -> None:
    """Add `forget` under the feedback stage's parser (the stage itself runs without a subcommand)."""
    from uniret.cli import add_common_args

    sub = p.add_subparsers(dest="feedback_command", metavar="<subcommand>")
    forget = sub.add_parser(
        "forget", help="remove a client's records from the raw UBI spans and from what the stage derived from them",
        description="Removes every record of --client-id from the spans under params feedback.log_dir, then "
                    "rebuilds artifacts/feedback from the cleaned spans (the window its last run read), so no "
                    "pair, judgment, propensity or reject is left that came from that client.",
    )
    add_common_args(forget)
    forget.add_argument("--client-id", required=True, help="the UBI client_id whose records are removed")
    forget.set_defaults(func=_forget)
