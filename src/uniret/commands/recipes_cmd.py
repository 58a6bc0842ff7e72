"""`uniret recipes compare`: train every recipe with the DAG's stage functions and compare them."""

from __future__ import annotations

import argparse


def _compare(args: argparse.Namespace) -> int:
    from uniret.ops.recipes_compare import compare_recipes
    from uniret.runtime import make_context

    ctx = make_context(args.params, args.profile, args.data, args.artifacts)
    known = list(ctx.params.section("model").recipes)  # one per recipes/<name>.yaml
    recipes = args.recipes or known
    unknown = sorted(set(recipes) - set(known))
    if unknown:
        raise SystemExit(f"unknown recipe(s) {unknown}; known: {known}")
    compare_recipes(ctx, recipes, train=not args.no_train, zeroshot=not args.no_zeroshot, retrain=args.retrain)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    from uniret.cli import add_common_args

    p = sub.add_parser("recipes", help="compare the training recipes",
                       description="Run each recipe's training stages into artifacts/recipes/<recipe>/ and "
                                   "score them beside BM25 and the untrained models (needs validate and bm25).")
    psub = p.add_subparsers(dest="recipes_command", metavar="<action>", required=True)
    c = psub.add_parser("compare", help="train and evaluate recipes -> artifacts/recipes/compare.{json,md}")
    add_common_args(c)
    c.add_argument("--recipes", nargs="+", default=None, help="recipes to run (default: all four)")
    c.add_argument("--no-train", action="store_true", help="score the models already under artifacts/recipes/")
    c.add_argument("--retrain", action="store_true",
                   help="train the recipe of the main DAG again too (default: score its models in artifacts/<stage>/)")
    c.add_argument("--no-zeroshot", action="store_true", help="leave out the untrained starting models")
    c.set_defaults(func=_compare)
