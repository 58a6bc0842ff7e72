"""`uniret simulate`: simulated users on a running uniret server (params section `simulate`)."""

from __future__ import annotations

import argparse
import json
from urllib.parse import urlsplit

from uniret.commands.outputs import output_argument


def _simulate(args: argparse.Namespace) -> int:
    import dataclasses

    from uniret.config import load_params
    from uniret.data.roots import resolve_data_root
    from uniret.simulation.driver import simulate
    from uniret.utils.files import atomic_write_json

    params = load_params(args.params, args.profile)
    cfg = params.section("simulate")
    overrides = {k: v for k, v in (("sessions", args.sessions), ("seed", args.seed), ("dataset", args.dataset))
                 if v is not None}
    cfg = dataclasses.replace(cfg, **overrides)
    cfg.validate()
    url = urlsplit(args.url)
    if url.scheme != "http" or not url.hostname or url.port is None:
        raise ValueError(f"--url {args.url!r}: expected http://HOST:PORT")
    folder = resolve_data_root(args.data, params.section("data").root) / cfg.dataset
    summary = simulate(url.hostname, url.port, folder, cfg)
    if args.out:
        atomic_write_json(args.out, summary)
    print(json.dumps(summary, indent=2))
    return 0 if not summary["failures"] else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate", help="simulated users on a running server: Zipf-like query stream, UBI impressions and clicks",
        description="Sends the judged queries of a labelled folder's split (params simulate.dataset/split) to a "
                    "running `uniret serve` as a Zipf-like stream and posts one impression per result shown and the "
                    "clicks of a position-based click model (ULTRA's protocol) on the qrels grades to /events. "
                    "Prints (and with --out writes) the figures with every assumption behind them. "
                    "It sends one batch of traffic; `uniret loop run` runs N nights of traffic, nightly and "
                    "promotion, and it also drives a canary's interleaved answers (docs/gate-registry.md#canary).",
    )
    p.add_argument("--url", default="http://127.0.0.1:8000", help="the server (default: http://127.0.0.1:8000)")
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    p.add_argument("--profile", default=None, help="params profile (default: $UNIRET_PROFILE, then params.yaml)")
    p.add_argument("--data", default=None, help="data root with BEIR folders (default: $UNIRET_DATA, params, ../shared/data)")
    p.add_argument("--dataset", default=None, help="labelled folder under the data root (default: simulate.dataset)")
    p.add_argument("--sessions", type=int, default=None, help="sessions to send (default: simulate.sessions)")
    p.add_argument("--seed", type=int, default=None, help="seed of the query stream and the clicks (default: simulate.seed)")
    output_argument(p, "--out", kind="replaced", default=None, help="also write the summary JSON here")
    p.set_defaults(func=_simulate)
