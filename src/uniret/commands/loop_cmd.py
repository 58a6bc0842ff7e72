"""`uniret loop`: the N-night learning loop in simulation (run one arm; write the report of several)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from uniret.commands.outputs import output_argument
from uniret.core.errors import ConfigError


def _run(args: argparse.Namespace) -> int:
    from uniret.config import load_params
    from uniret.data.roots import resolve_data_root
    from uniret.loop.nights import LoopConfig, run_loop

    params = Path(args.params)
    root = resolve_data_root(args.data, load_params(params, args.profile).section("data").root)
    checkpoint = Path(args.checkpoint)
    if not (checkpoint / "uniret_model.json").is_file():
        raise FileNotFoundError(f"--checkpoint {checkpoint}: not a uniret checkpoint folder (no uniret_model.json); "
                                "run `make demo` first or point at another model/ folder")
    if args.retrain_steps < 0:
        raise ConfigError(f"--retrain-steps must be >= 0, got {args.retrain_steps}")
    if not 0.0 <= args.canary_share <= 1.0:
        raise ConfigError(f"--canary-share must be in [0, 1], got {args.canary_share}")
    extra = json.loads(args.set) if args.set else {}
    cfg = LoopConfig(arm=args.arm, nights=args.nights, sessions=args.sessions, work=Path(args.work),
                     checkpoint=checkpoint.resolve(), data_root=root.resolve(), params=params.resolve(),
                     dataset=args.dataset, randpair_share=args.randpair_share, seed=args.seed,
                     cache=Path(args.cache) if args.cache else None, extra=extra, profile=args.profile or "cpu",
                     until=args.until, retrain_steps=args.retrain_steps, canary_share=args.canary_share)
    summary = run_loop(cfg)
    print(json.dumps({n["night"]: n["ndcg@10"] for n in summary["nights"]}))
    return 0


def _report(args: argparse.Namespace) -> int:
    from uniret.loop.report import build, markdown, plot
    from uniret.utils.files import atomic_write_json, atomic_write_text

    arms = {}
    for item in args.arm:
        name, _, work = item.partition("=")
        if not work:
            raise ValueError(f"--arm {item!r}: expected NAME=WORK_DIR")
        arms[name] = Path(work)
    from uniret.config import load_params
    from uniret.data.roots import resolve_data_root

    params = load_params(Path(args.params), None)
    root = resolve_data_root(args.data, params.section("data").root)
    doc = build(arms, domain=root / args.dataset, gate=params.section("gate"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = args.shown_command or "uniret loop report " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    doc["command"] = command
    atomic_write_json(out / "loop.json", doc)
    atomic_write_text(out / "loop.md", markdown(doc, command))
    plot(doc, out / "loop.png")
    print(out / "loop.md")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("loop", help="the N-night learning loop in simulation: traffic, nightly, promotion, next day",
                       description="Runs one arm of the learning loop (docs/learning-loop.md): night 0 indexes the "
                                   "traffic domain with the starting checkpoint; each night a day of simulated users "
                                   "on the real server, the feedback/index/evaluate stages and a promotion. `report` "
                                   "writes the arms' figures, intervals and plot.")
    lsub = p.add_subparsers(dest="loop_command", required=True)
    r = lsub.add_parser("run", help="run one arm (resumes: nights already in <work>/loop.json are kept)")
    r.add_argument("--arm", required=True, choices=("debiased", "naive", "skyline"))
    output_argument(r, "--work", kind="folder", required=True, help="the arm's workspace (params, artifacts, registry, logs)")
    r.add_argument("--nights", type=int, default=5)
    r.add_argument("--until", type=int, default=None,
                   help="stop after this night (run arms night by night; --nights still dates the days)")
    r.add_argument("--sessions", type=int, default=1000, help="simulated sessions a night")
    r.add_argument("--checkpoint", default="artifacts/continual/model", help="the starting model (default: the demo's)")
    r.add_argument("--cache", default="artifacts/cache", help="corpus-encoding cache to start from (default: the demo's)")
    r.add_argument("--dataset", default="nfcorpus", help="traffic domain: its train queries are the traffic")
    r.add_argument("--randpair-share", type=float, default=0.1, help="share of answers with two adjacent results swapped")
    r.add_argument("--seed", type=int, default=7)
    r.add_argument("--canary-share", type=float, default=0.0,
                   help="from day 2, this share of searches interleaves production with the previous production "
                        "bundle (a canary the loop never decides): same-day interventions for the propensities")
    r.add_argument("--retrain-steps", type=int, default=0,
                   help="click arms: nights with training clicks first retrain the transformer on them for this "
                        "many steps, warm-started from production's checkpoint (0: the light profile, no retraining)")
    r.add_argument("--params", default="params.yaml")
    r.add_argument("--profile", default=None, help="params profile of the nights (default: cpu)")
    r.add_argument("--data", default=None, help="data root (default: $UNIRET_DATA, params, ../shared/data)")
    r.add_argument("--set", default=None, help="further params overrides as JSON (e.g. the tiny profile's slice)")
    r.set_defaults(func=_run)
    w = lsub.add_parser("report", help="results/loop/: the arms night by night, intervals, propensities, plot")
    w.add_argument("--arm", action="append", required=True, help="NAME=WORK_DIR, once per arm")
    output_argument(w, "--out", kind="folder", default="results/loop")
    w.add_argument("--command", dest="shown_command", default=None, help="the command line to print in the report")
    w.add_argument("--dataset", default="nfcorpus", help="the traffic domain (its train qrels grade RandPair's cost)")
    w.add_argument("--params", default="params.yaml")
    w.add_argument("--data", default=None, help="data root (default: $UNIRET_DATA, params, ../shared/data)")
    w.set_defaults(func=_report)
