"""hybrid_fast over HTTP served by two source trees of uniret, the same bundle, servers alternated (E104).

Usage: python lab/trees_ab.py BUNDLE --before CHECKOUT --after CHECKOUT [--servers 3] [--requests 12000]
       [--out lab/results/served_query_cpu] [--data ../shared/data]
       python lab/trees_ab.py --summarize lab/results/served_query_cpu

CHECKOUT: a folder holding a uniret tree (e.g. `git worktree add ../before HEAD~1`), run with this
interpreter's packages and its own `src/` first on PYTHONPATH. The trees take turns, `--servers`
servers each: the tree's own lab/serve_threads.py with the modes bm25 and hybrid_fast, three rounds.
summary.json: per server, hybrid_fast's QPS over the bm25 mode's in rounds 2 and 3 and both modes'
server CPU per request. CPU figures are the machine's: take them on an idle one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from ab_summary import MODES, add_ab_args, print_summary, summarize_only, summarize_servers

FORMS = ("before", "after")


def summarize(out: Path) -> dict:
    """summary.json from the servers' JSON files in `out`."""
    return summarize_servers(out, FORMS, __doc__.split("\n\n", 2)[2].strip())


def server_command(checkout: Path, bundle: Path, requests: int, data: Path, out: Path) -> tuple[list[str], dict]:
    """(argv, environment) of one server run of `checkout`'s serve_threads.py."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout / "src"), str(checkout / "lab")])}
    argv = [sys.executable, str(checkout / "lab" / "serve_threads.py"), str(bundle), "--modes", *MODES,
            "--requests", str(requests), "--params", str(checkout / "params.yaml"), "--data", str(data),
            "--out", str(out)]
    return argv, env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=Path, nargs="?")
    parser.add_argument("--before", type=Path)
    parser.add_argument("--after", type=Path)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    add_ab_args(parser, "lab/results/served_query_cpu")
    args = parser.parse_args()
    if summarize_only(args, summarize):
        return 0
    if args.bundle is None or args.before is None or args.after is None:
        parser.error("BUNDLE, --before and --after are required unless --summarize")
    args.out.mkdir(parents=True, exist_ok=True)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for i in range(1, args.servers + 1):
        for form, checkout in trees.items():
            argv, env = server_command(checkout, args.bundle.resolve(), args.requests, args.data.resolve(),
                                       (args.out / f"{form}-{i}.json").resolve())
            subprocess.run(argv, env=env, check=True)
    return print_summary(summarize(args.out))


if __name__ == "__main__":
    raise SystemExit(main())
