"""`uniret rollback` and `uniret registry list|show|status|verify|prune|pause|resume|lift`: operate the
bundle registry."""

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
        result = rollback(root, serving=serving_from(params, args.serve_url), dvc_push=dvc_push, on_change=on_change,
                          reason=args.reason)
    finally:
        if engine is not None:
            engine.close()
    print(f"production: {result.previous} -> {result.version} (rolled back)")
    print(f"rejected: {result.rejected}" + (f" (promotion refuses it until `uniret registry lift {result.previous}`)"
                                            if not result.rejected.startswith(("not ", "failed")) else ""))
    print(f"engine: {result.engine}")
    print(f"dvc: {result.dvc}")
    print(f"notify: {result.notify.status}: {result.notify.detail}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from uniret.registry.bundles import list_bundles
    from uniret.registry.control import read_control
    from uniret.registry.pointer import read_pointer

    _, root = _setup(args)
    pointer = read_pointer(root)
    live = pointer["version"] if pointer else None
    entries = list_bundles(root)
    control = read_control(root)
    rejected = {r.version: r.reason for r in control.rejected.values()}
    # why each bundle was made production, when the change recorded one (corpus refresh, canary, rollback)
    why = {}
    for entry in reversed([pointer, *pointer["history"]] if pointer else []):
        if entry.get("reason"):
            why[entry["version"]] = entry["reason"]
        elif entry.get("rolled_back_from"):
            why[entry["version"]] = f"rollback from {entry['rolled_back_from']}"
    if args.json:
        print(json.dumps({"production": live, "bundles": entries, "control": control.to_dict()}, indent=2))
        return 0
    if not entries:
        print(f"{root}: no bundles")
    for e in entries:
        mark = "*" if e["version"] == live else " "
        reason = rejected.get(e["version"])
        print(f"{mark} {e['version']}  published {e.get('published_at')}  parent {e.get('parent')}"
              + (f"  ({why[e['version']]})" if e["version"] in why else "")
              + (f"  REJECTED (rolled back{': ' + reason if reason else ''})" if e["version"] in rejected else "")
              + (f"  ERROR {e['error']}" if "error" in e else ""))
    if control.paused:
        print(control.pause_text())
    return 0


def _status(args: argparse.Namespace) -> int:
    from uniret.registry.canary import read_canary
    from uniret.registry.control import HASH_SHOWN, read_control
    from uniret.registry.pointer import read_pointer

    _, root = _setup(args)
    pointer = read_pointer(root)
    control = read_control(root)
    canary = read_canary(root)
    canary = canary and {k: v for k, v in canary.items() if k != "history"}
    if args.json:
        print(json.dumps({"production": pointer and {k: v for k, v in pointer.items() if k != "history"},
                          **control.to_dict(), "canary": canary}, indent=2, sort_keys=True))
        return 0
    if pointer is None:
        print("production: none (nothing promoted yet)")
    else:
        back = f", rolled back from {pointer['rolled_back_from']}" if pointer.get("rolled_back_from") else ""
        print(f"production: {pointer['version']} (since {pointer.get('promoted_at')}{back})")
    print(f"promotion: {control.pause_text() if control.paused else 'allowed (not paused)'}")
    if not control.rejected:
        print("rejected: none")
    for content_hash, r in sorted(control.rejected.items(), key=lambda kv: kv[1].rolled_back_at):
        why = f": {r.reason}" if r.reason else ""
        print(f"rejected: {r.version} (content {content_hash[:HASH_SHOWN]}) rolled back at {r.rolled_back_at}"
              f"{f' by {r.by}' if r.by else ''}{why}")
    if canary is None:
        print("canary: none ever ran")
    elif canary["status"] == "running":
        print(f"canary: {canary['candidate']} running since {canary['started_at']} against {canary['production']} "
              f"({canary['share']:.0%} of searches, deadline {canary['deadline']}; `uniret canary status` for its evidence)")
    else:
        print(f"canary: last {canary['candidate']} {canary['status']} at {canary.get('decided_at')}: {canary.get('reason')}")
    return 0


def _push_after(args: argparse.Namespace, params, root) -> None:
    from uniret.registry.configured import registry_config
    from uniret.registry.dvc_sync import push_registry

    print(f"dvc: {push_registry(root) if registry_config(params).dvc_push and not args.no_dvc_push else 'skipped'}")


def _pause(args: argparse.Namespace) -> int:
    from uniret.registry.control import pause

    params, root = _setup(args)
    control, changed = pause(root, args.reason)
    print(control.pause_text() if changed else f"already paused: {control.pause_text()}")
    if changed:
        _push_after(args, params, root)
    return 0


def _resume(args: argparse.Namespace) -> int:
    from uniret.registry.control import resume

    params, root = _setup(args)
    before, after = resume(root)
    if not before.paused:
        print("promotion was not paused: nothing changed")
        return 0
    print(f"promotion resumed (was paused since {before.paused_at}); the next nightly may promote")
    _push_after(args, params, root)
    return 0


def _lift(args: argparse.Namespace) -> int:
    from uniret.registry.control import HASH_SHOWN, lift

    params, root = _setup(args)
    lifted = lift(root, args.bundle)
    print(f"lifted: {lifted.version} (content {lifted.content_hash[:HASH_SHOWN]}, rolled back at "
          f"{lifted.rolled_back_at}); promotion may choose it again")
    _push_after(args, params, root)
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
    """Register `rollback` and `registry` (list, show, status, verify, prune, pause, resume, lift)."""
    r = sub.add_parser(
        "rollback",
        help="restore the previous production bundle, reject the withdrawn one, tell serving to reload",
        description="Point production back at the previous bundle of the pointer's history (atomic rename), "
        "record the withdrawn bundle's content as rejected (promotion refuses it, a nightly rebuilding it "
        "included, until `uniret registry lift`), `dvc push` the registry when a remote is configured, and "
        "POST /admin/reload to registry.serve_url (or $UNIRET_SERVE_URL) with the token from "
        "$UNIRET_ADMIN_TOKEN (registry.token_env); replicas watching the pointer follow within "
        "serve.watch_interval_s. Fails when there is no history.",
    )
    _common(r)
    r.add_argument("--serve-url", default=None, help="server to reload (default: params registry.serve_url)")
    r.add_argument("--reason", default="", help="why, recorded with the rejection (shown by `uniret registry status`)")
    r.add_argument("--no-dvc-push", action="store_true", help="do not dvc push the registry")
    r.set_defaults(func=_rollback)

    g = sub.add_parser("registry", help="inspect the registry; pause, resume, lift a rollback's rejection",
                       description="Inspect the bundle registry and the decisions people made about promotion "
                       "(registry/control.json): a pause, and the content rollbacks rejected.")
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
    st = gsub.add_parser("status", help="production, whether promotion is paused, and the rejected bundles",
                         description="Production (and the bundle it was rolled back from), whether promotion is "
                         "paused (since when, by whom, why), and every bundle content a rollback rejected.")
    _common(st)
    st.add_argument("--json", action="store_true", help="machine-readable output")
    st.set_defaults(func=_status)
    pa = gsub.add_parser("pause", help="freeze promotion (the nightly still trains, evaluates and reports)",
                         description="Pause promotion under the registry lock: `uniret nightly` still runs every "
                         "stage and the gate, writes its report, does not promote and exits 4 (paused); the promote "
                         "stage refuses. Rollbacks stay possible. Pausing a paused registry changes nothing. "
                         "`uniret registry resume` ends it.")
    _common(pa)
    pa.add_argument("--reason", default="", help="why (shown by `uniret registry status` and the nightly's summary)")
    pa.add_argument("--no-dvc-push", action="store_true", help="do not dvc push the registry afterwards")
    pa.set_defaults(func=_pause)
    rs = gsub.add_parser("resume", help="end a pause: the next nightly may promote again",
                         description="End a pause made by `uniret registry pause`. Rejected bundles stay "
                         "rejected (see `uniret registry lift`).")
    _common(rs)
    rs.add_argument("--no-dvc-push", action="store_true", help="do not dvc push the registry afterwards")
    rs.set_defaults(func=_resume)
    lf = gsub.add_parser("lift", help="let a rolled-back bundle's content be promoted again",
                         description="`uniret rollback` records the withdrawn bundle's content as rejected, so "
                         "that no promotion (a nightly rebuilding it on unchanged data included) brings it back. "
                         "Lift removes that rejection; it does not promote anything. Name the bundle by its "
                         "version or its content hash (8 or more leading hex digits), as `uniret registry status` "
                         "lists them.")
    _common(lf)
    lf.add_argument("bundle", metavar="VERSION|HASH", help="the rejected bundle's version or content hash")
    lf.add_argument("--no-dvc-push", action="store_true", help="do not dvc push the registry afterwards")
    lf.set_defaults(func=_lift)
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
