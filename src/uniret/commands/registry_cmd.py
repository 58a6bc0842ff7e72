"""`uniret rollback` and `uniret registry list|show|verify|prune`: operate the bundle registry."""

from __future__ import annotations

import argparse
import json


def _count(value: str) -> int:
    """argparse type: a whole number >= 0 (a bad --keep-history is a usage error, not a traceback)."""
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value!r}")
    return number


def _setup(args: argparse.Namespace):
    from uniret.config import load_params
    from uniret.registry.configured import registry_root

    params = load_params(args.params, args.profile)
    return params, registry_root(params, args.registry)


def _rollback(args: argparse.Namespace) -> int:
    from uniret.milvus.promotion import engine_hook
    from uniret.registry.configured import registry_config, serving_from
    from uniret.registry.promotion import rollback

    params, root = _setup(args)
    dvc_push = registry_config(params).dvc_push and not args.no_dvc_push
    engine, on_change = engine_hook(params.section("milvus")) if "milvus" in params.raw else (None, None)
    try:
        result = rollback(root, serving=serving_from(params, args.serve_url), dvc_push=dvc_push, on_change=on_change)
    finally:
        if engine is not None:
            engine.close()
    print(f"production: {result.previous} -> {result.version} (rolled back)")
    print(f"engine: {result.engine}")
    print(f"dvc: {result.dvc}")
    print(f"notify: {result.notify.status}: {result.notify.detail}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from uniret.registry.bundles import list_bundles
    from uniret.registry.pointer import read_pointer

    _, root = _setup(args)
    pointer = read_pointer(root)
    live = pointer["version"] if pointer else None
    entries = list_bundles(root)
    if args.json:
        print(json.dumps({"production": live, "bundles": entries}, indent=2))
        return 0
    if not entries:
        print(f"{root}: no bundles")
        return 0
    for e in entries:
        mark = "*" if e["version"] == live else " "
        print(f"{mark} {e['version']}  published {e.get('published_at')}  parent {e.get('parent')}"
              + (f"  ERROR {e['error']}" if "error" in e else ""))
    return 0


def _show(args: argparse.Namespace) -> int:
    from uniret.registry.bundles import bundle_dir, read_manifest
    from uniret.registry.errors import RegistryError
    from uniret.registry.pointer import read_pointer

    _, root = _setup(args)
    pointer = read_pointer(root)
    version = args.version or (pointer["version"] if pointer else None)
    if version is None:
        raise RegistryError(f"{root}: no production bundle; name a VERSION (see `uniret registry list`)")
    manifest = read_manifest(bundle_dir(root, version))
    if not args.full:
        manifest.pop("evaluation", None)  # per-dataset tables are long; --full shows them
    print(json.dumps({"production": pointer, "bundle": manifest} if args.version is None else manifest,
                     indent=2, sort_keys=True))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from uniret.registry.verify import verify_registry

    _, root = _setup(args)
    report = verify_registry(root)
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


def _prune(args: argparse.Namespace) -> int:
    from uniret.core.errors import ConfigError
    from uniret.registry.configured import registry_config
    from uniret.registry.dvc_sync import push_registry
    from uniret.registry.retention import prune

    params, root = _setup(args)
    cfg = registry_config(params)
    keep = args.keep_history if args.keep_history is not None else cfg.keep_history
    if keep is None:
        raise ConfigError("give --keep-history N, or set registry.keep_history (null keeps every bundle)")
    result = prune(root, keep, dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    print(f"kept: {', '.join(result.kept)}")
    print(f"{verb}: {', '.join(result.deleted) or 'nothing'}")
    if result.left_alone:
        print(f"left alone (not written by uniret): {', '.join(result.left_alone)}")
    if result.history_dropped:
        print(f"pointer history: {'would drop' if args.dry_run else 'dropped'} {result.history_dropped} older entries")
    if not args.dry_run and (result.deleted or result.history_dropped):
        print(f"dvc: {push_registry(root) if cfg.dvc_push and not args.no_dvc_push else 'skipped'}")
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    p.add_argument("--profile", default=None, help="profile (default: $UNIRET_PROFILE, then params.yaml)")
    p.add_argument("--registry", default=None, help="registry folder (default: params registry.root)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register `rollback` and `registry` (list, show, verify, prune)."""
    r = sub.add_parser(
        "rollback",
        help="restore the previous production bundle and tell serving to reload",
        description="Point production back at the previous bundle of the pointer's history (atomic rename), "
        "`dvc push` the registry when a remote is configured, and POST /admin/reload to registry.serve_url "
        "with the token from $UNIRET_ADMIN_TOKEN (or registry.token_env). Fails when there is no history.",
    )
    _common(r)
    r.add_argument("--serve-url", default=None, help="server to reload (default: params registry.serve_url)")
    r.add_argument("--no-dvc-push", action="store_true", help="do not dvc push the registry")
    r.set_defaults(func=_rollback)

    g = sub.add_parser("registry", help="list or show published bundles", description="Inspect the bundle registry.")
    gsub = g.add_subparsers(dest="registry_command", metavar="<action>", required=True)
    lst = gsub.add_parser("list", help="every bundle, production marked with *")
    _common(lst)
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    lst.set_defaults(func=_list)
    show = gsub.add_parser("show", help="a bundle's manifest (default: production, with its pointer)")
    _common(show)
    show.add_argument("version", nargs="?", default=None, help="bundle version (default: production)")
    show.add_argument("--full", action="store_true", help="include the per-dataset evaluation metrics")
    show.set_defaults(func=_show)
    ver = gsub.add_parser("verify", help="check every bundle against its recorded checksums and the pointer",
                          description="Verify the production pointer (valid, names a published bundle, history "
                          "too) and every published bundle against the SHA256SUMS recorded at promotion. "
                          "Exit 1 when anything fails.")
    _common(ver)
    ver.set_defaults(func=_verify)
    pr = gsub.add_parser("prune", help="delete bundles that production's rollback history no longer needs",
                         description="Keep production and the first N bundles of its rollback history (the "
                         "bundles N rollbacks reach), delete every other published bundle and trim the pointer's "
                         "history to the kept ones, under the registry lock. N: --keep-history, else params "
                         "registry.keep_history (which also prunes after every promotion). Refused, changing "
                         "nothing, when production or a kept history entry is missing or fails verification; "
                         "folders under bundles/ that uniret did not publish are left alone.")
    _common(pr)
    pr.add_argument("--keep-history", type=_count, default=None, metavar="N",
                    help="history bundles to keep besides production (default: params registry.keep_history)")
    pr.add_argument("--dry-run", action="store_true", help="print what would be deleted; change nothing")
    pr.add_argument("--no-dvc-push", action="store_true", help="do not dvc push the registry afterwards")
    pr.set_defaults(func=_prune)
