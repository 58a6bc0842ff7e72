"""`uniret significance A B`: is system B better than A on the evaluated datasets, or lucky?"""

from __future__ import annotations

import argparse
from pathlib import Path

from uniret.commands.outputs import output_argument

DEFAULT_EVALUATED = "artifacts/evaluate"


def _run(args: argparse.Namespace) -> int:
    from uniret.config.params import load_params
    from uniret.evaluation.compare_systems import (
        compare_evaluated,
        comparison_doc,
        datasets_of,
        macro_groups,
        render_comparison,
    )
    from uniret.utils.files import atomic_write_json, shown_path
    from uniret.utils.owned import OWNER_STAMP, check_output_path

    if args.out:
        check_output_path(args.out)  # refused before the bootstrap runs
    evaluated = Path(args.evaluated)
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()] if args.datasets else datasets_of(evaluated, args.a)
    if not datasets:
        raise FileNotFoundError(f"{evaluated}: no per-query scores of {args.a!r}; run the evaluate stage first")
    train = load_params(args.params, args.profile).section("data").train_dataset
    results = compare_evaluated(evaluated, args.a, args.b, args.metric, datasets, macro_groups(datasets, train),
                                args.resamples, args.seed)
    print(render_comparison(results, args.a, args.b, args.metric), end="")
    if args.out:
        atomic_write_json(Path(args.out), {**OWNER_STAMP, **comparison_doc(args.a, args.b, args.metric,
                                                                           shown_path(evaluated, Path.cwd()), results)})
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "significance", help="paired bootstrap of two evaluated systems (B - A per dataset, with an interval)",
        description="Compare two systems of an evaluate output per dataset and over the datasets (the mean of their "
                    "means, as metrics.md's macro columns): B - A, its bootstrap interval over queries, and the share "
                    "of resamples where B is not better. Differences inside the interval are the luck of the queries.")
    p.add_argument("--params", default="params.yaml", help="params file: data.train_dataset is left out of the "
                   "zero-shot macro (default: params.yaml)")
    p.add_argument("--profile", default=None, help="profile (default: $UNIRET_PROFILE, then params.yaml)")
    p.add_argument("a", help="system A, e.g. bm25 (a folder name under <evaluated>/per_query)")
    p.add_argument("b", help="system B, e.g. hybrid_bm25")
    p.add_argument("--evaluated", default=DEFAULT_EVALUATED,
                   help=f"an evaluate output folder holding per_query/ (default: {DEFAULT_EVALUATED})")
    p.add_argument("--datasets", default=None, help="comma-separated (default: every dataset A was scored on)")
    p.add_argument("--metric", default="ndcg@10", help="a metric of the per-query files (default: ndcg@10)")
    p.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples (default: 10000)")
    p.add_argument("--seed", type=int, default=0)
    output_argument(p, "--out", kind="replaced", default=None, help="also write the figures as JSON here (an existing file only when uniret wrote it)")
    p.set_defaults(func=_run)
