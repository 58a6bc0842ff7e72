"""`uniret canary start|status|decide|stop`: try a candidate on live traffic before it becomes production."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from uniret.commands.outputs import output_argument

EXIT_PROMOTED, EXIT_ROLLED_BACK, EXIT_HELD, EXIT_WAITING = 0, 3, 4, 5


def _setup(args: argparse.Namespace):
    from uniret.config import load_params
    from uniret.registry.configured import registry_root

    params = load_params(args.params, args.profile)
    return params, registry_root(params, args.registry)


def _start(args: argparse.Namespace) -> int:
    from uniret.interleaving.canary_run import start_canary

    params, root = _setup(args)
    state = start_canary(params, root, Path(args.bundle), lineage={"started_by": "uniret canary start"},
                         serve_url=args.serve_url)
    print(json.dumps({k: v for k, v in state.items() if k != "history"}, indent=2))
    return 0


def _status(args: argparse.Namespace) -> int:
    from uniret.interleaving.canary_run import assess
    from uniret.registry.canary import read_canary

    params, root = _setup(args)
    state = read_canary(root)
    if state is None:
        print(f"{root}: no canary has run")
        return 0
    shown = {k: v for k, v in state.items() if k != "history"}
    if state["status"] == "running":
        shown["assessment"] = assess(params, state)
    print(json.dumps(shown, indent=2))
    return 0


def _decide(args: argparse.Namespace) -> int:
    from uniret.interleaving.canary_run import decide_canary
    from uniret.registry.control import PromotionHeld

    params, root = _setup(args)
    try:
        decision = decide_canary(params, root, Path(args.out) if args.out else None, args.serve_url)
    except PromotionHeld as exc:
        print(f"held: {exc}")
        return EXIT_HELD
    print(json.dumps(decision, indent=2))
    return {"promoted": EXIT_PROMOTED, "running": EXIT_WAITING}.get(decision["status"], EXIT_ROLLED_BACK)


def _stop(args: argparse.Namespace) -> int:
    from uniret.registry.canary import finish
    from uniret.registry.configured import serving_from
    from uniret.registry.notify import notify_canary

    params, root = _setup(args)
    state = finish(root, "abandon", args.reason or "stopped by hand (uniret canary stop)")
    serving = serving_from(params, args.serve_url)
    state["notify"] = notify_canary(serving.url, serving.token, serving.timeout_s).to_dict()
    print(json.dumps({k: v for k, v in state.items() if k != "history"}, indent=2))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "canary", help="interleave a candidate with production on live traffic, then promote or roll it back",
        description="A canary serves the team-draft interleaving of production and a candidate for params "
                    "canary.share of the searches, logs the teams in the UBI query records, and decides on the "
                    "clicks (params canary.rule; docs/gate-registry.md#canary). Exit codes of decide: 0 promoted, "
                    "3 rolled back or abandoned, 4 held (registry paused), 5 still waiting for evidence.")
    csub = p.add_subparsers(dest="canary_command", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
        q.add_argument("--profile", default=None, help="params profile (default: $UNIRET_PROFILE, then params.yaml)")
        q.add_argument("--registry", default=None, help="registry folder (default: params registry.root)")
        q.add_argument("--serve-url", default=None, help="server to notify (default: registry.serve_url / "
                                                         "$UNIRET_SERVE_URL); replicas watching the registry follow "
                                                         "within serve.watch_interval_s")

    q = csub.add_parser("start", help="publish a bundle and start its canary against production")
    q.add_argument("bundle", help="bundle folder (e.g. artifacts/index/bundle)")
    common(q)
    q.set_defaults(func=_start)
    q = csub.add_parser("status", help="the last canary, and the running one's evidence so far")
    common(q)
    q.set_defaults(func=_status)
    q = csub.add_parser("decide", help="apply the rule to the running canary: promote, roll back, or wait")
    output_argument(q, "--out", kind="folder", default="artifacts/canary", help="folder of decision.json and decision.md "
                                                             "(default: artifacts/canary)")
    common(q)
    q.set_defaults(func=_decide)
    q = csub.add_parser("stop", help="abandon the running canary: production stays, nothing is rejected")
    q.add_argument("--reason", default="", help="recorded in canary.json")
    common(q)
    q.set_defaults(func=_stop)
