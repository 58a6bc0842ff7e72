"""`uniret params check|show`: type-check every section and recipe file; print the resolved settings."""

from __future__ import annotations

import argparse


def _check(args: argparse.Namespace) -> int:
    from uniret.config import load_params
    from uniret.config.params import Params, known_profiles
    from uniret.config.recipe_files import ATTACHED_KEY, recipe_names

    params = load_params(args.params, args.profile)
    names = params.check_all()
    print(f"{params.path}: profile {params.profile!r}: sections OK: {', '.join(names)}")
    # every recipe file under every profile (a profile override in a recipe file is checked too)
    for profile in known_profiles(params.raw):
        other = Params(raw=params.raw, profile=profile, path=params.path)
        for section in ("model", "losses", "training"):
            other.section(section)
    print(f"{params.raw[ATTACHED_KEY]}: recipes OK for profiles {', '.join(known_profiles(params.raw))}: "
          f"{', '.join(recipe_names(params.raw))}")
    return 0


def _show(args: argparse.Namespace) -> int:
    import yaml

    from uniret.config import load_params

    params = load_params(args.params, args.profile)
    if args.recipe:
        params = params.with_recipe(args.recipe)
    settings = params.settings()
    recipe = settings["model"]["recipe"]
    for name in ("model", "losses", "training"):  # the active recipe's entries only
        settings[name]["recipes"] = {recipe: settings[name]["recipes"][recipe]}
    if args.section:
        settings = {name: settings[name] for name in args.section}
    print(f"# {params.path}: profile {params.profile}, recipe {recipe}")
    print(yaml.safe_dump(settings, sort_keys=False, allow_unicode=True), end="")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    from uniret.config.params import SECTIONS

    p = sub.add_parser("params", help="check params.yaml", description="Type-check params.yaml for a profile.")
    psub = p.add_subparsers(dest="params_command", metavar="<action>", required=True)
    c = psub.add_parser("check", help="load every section with the chosen profile")
    c.add_argument("--params", default="params.yaml")
    c.add_argument("--profile", default=None)
    c.set_defaults(func=_check)
    s = psub.add_parser("show", help="print the resolved settings (YAML) of a recipe and profile")
    s.add_argument("--params", default="params.yaml")
    s.add_argument("--profile", default=None)
    s.add_argument("--recipe", default=None, help="a recipes/<name>.yaml (default: params.yaml model.recipe)")
    s.add_argument("--section", action="append", default=None, choices=sorted(SECTIONS),
                   help="only this section (repeatable)")
    s.set_defaults(func=_show)
