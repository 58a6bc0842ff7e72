"""`uniret results`: the committed figures of the shipped model (results/) and the tables made from them.

    uniret results collect [--artifacts artifacts] [--demo-seconds S]   # after make demo: results/ from artifacts/
    uniret results render [--write | --check]                           # README.md and docs/results.md tables
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_RESULTS = "results"


def _collect(args: argparse.Namespace) -> int:
    from uniret.ops.results_collect import collect

    demo = collect(Path(args.artifacts), Path(args.results), args.served, args.demo_seconds, args.also,
                   args.metric, args.resamples, provenance=args.provenance, commit=args.commit)
    print(f"results: {args.results}/demo.json, evaluate/ and significance/ written "
          f"(served {demo['served_mode']}, heads {', '.join(demo['heads']) or 'none'}); "
          f"now `uniret results render --write`")
    return 0


def _render(args: argparse.Namespace) -> int:
    from uniret.ops.results_table import render_blocks, stale, write

    # writing needs every input: a missing bench.json must not blank the committed p50 column
    blocks = render_blocks(Path(args.results), args.metric, require_bench=args.write)
    repo = Path(args.repo)
    if args.write:
        changed = write(repo, blocks)
        print(f"results: rewrote {', '.join(changed)}" if changed else "results: tables already current")
        return 0
    if args.check:
        behind = stale(repo, blocks)
        if behind:
            print(f"results: tables differ from results/ in {', '.join(behind)}; run `uniret results render --write`",
                  file=sys.stderr)
            return 1
        print("results: tables match results/")
        return 0
    for name, text in blocks.items():
        print(f"<!-- results:{name} -->\n{text}\n<!-- /results:{name} -->\n")
    return 0


HELP = "committed figures of the shipped model: collect them after a demo, render the README table"
DESCRIPTION = ("results/ holds the figures README.md and docs/results.md show: `collect` copies a demo's evaluation "
               "and significance from its artifacts, `uniret bench` writes results/bench/, and `render` makes the "
               "tables from those files.")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help=HELP, description=DESCRIPTION)
    actions = p.add_subparsers(dest="action", required=True)
    c = actions.add_parser("collect", help="results/demo.json, evaluate/ and significance/ from a demo's artifacts")
    c.add_argument("--artifacts", default="artifacts", help="the demo's artifacts folder (default: artifacts)")
    c.add_argument("--results", default=DEFAULT_RESULTS, help=f"results folder (default: {DEFAULT_RESULTS})")
    c.add_argument("--served", default=None, help="served mode (default: the bundle's, model.serve_mode)")
    c.add_argument("--also", action="append", default=[],
                   help="another system to compare the served mode with (repeatable; BM25 and the heads always are)")
    c.add_argument("--demo-seconds", type=float, default=None,
                   help="wall seconds of the demo as measured (e.g. by /usr/bin/time); default: the stages' sum is shown")
    c.add_argument("--provenance", default=None,
                   help="how the figures were made when not by one cold demo (e.g. a DAG resumed at a stage); "
                        "shown instead of the demo's time")
    c.add_argument("--commit", default=None,
                   help="the commit the demo ran (default: the artifacts' checkout's HEAD now, '+changes' when "
                        "tracked files differ, as dvc.lock does after a demo)")
    c.add_argument("--metric", default="ndcg@10")
    c.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples (default: 10000)")
    c.set_defaults(func=_collect)
    r = actions.add_parser("render", help="print the results tables; --write puts them into README.md and docs/results.md")
    r.add_argument("--results", default=DEFAULT_RESULTS, help=f"results folder (default: {DEFAULT_RESULTS})")
    r.add_argument("--repo", default=".", help="repository root holding README.md and docs/ (default: .)")
    r.add_argument("--metric", default="ndcg@10")
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the tables' blocks in README.md and docs/results.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when a committed table differs from the rendering")
    r.set_defaults(func=_render)
