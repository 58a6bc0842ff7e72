"""What the lab scripts that load a `uniret serve` on a bundle share: their arguments, the params
edits of `--set`, the SciFact queries they send, and the CPU of a process's threads read from /proc."""

from __future__ import annotations

import argparse
from pathlib import Path

import psutil
import yaml

QUERIES = 300  # SciFact queries the loads cycle through


def add_server_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """BUNDLE, --data, --params, --profile and --set KEY=VALUE (repeatable)."""
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a params setting for this run (YAML value; a dotted key from the top, a bare one "
                             "under serve, e.g. gil_searches=1)")
    return parser


def apply_setting(params: dict, item: str) -> None:
    """Set KEY=VALUE (a YAML value) in the params tree: a dotted key from the top, a bare one under serve."""
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise ValueError(f"--set {item!r}: expected KEY=VALUE")
    keys = key.split(".") if "." in key else ["serve", key]
    node = params
    for part in keys[:-1]:
        if not isinstance(node.get(part), dict):
            raise ValueError(f"--set {item!r}: params has no section {part!r}")
        node = node[part]
    node[keys[-1]] = yaml.safe_load(value)


def edited_params(args: argparse.Namespace) -> dict:
    """The params tree of `args.params` with every `--set` applied."""
    raw = yaml.safe_load(args.params.read_text())
    for item in args.set:
        apply_setting(raw, item)
    return raw


def scifact_queries(args: argparse.Namespace) -> list[str]:
    """The first QUERIES SciFact query texts, file order."""
    from uniret.data.beir import iter_queries

    return [q.text for q in iter_queries(args.data / "scifact" / "queries.jsonl")][:QUERIES]


def thread_cpu(pid: int) -> dict[tuple[int, int, str], float]:
    """{(process, thread, comm): CPU seconds} of every thread of `pid` and its descendants."""
    out = {}
    root = psutil.Process(pid)
    for proc in [root, *root.children(recursive=True)]:
        for thread in proc.threads():
            try:
                name = Path(f"/proc/{proc.pid}/task/{thread.id}/comm").read_text().strip()
            except OSError:
                name = "?"
            out[(proc.pid, thread.id, name)] = thread.user_time + thread.system_time
    return out
