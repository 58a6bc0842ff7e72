"""`uniret data fetch <name>`: download a public BEIR zip, verify its checksum, unpack it atomically."""

from __future__ import annotations

import argparse


def _fetch(args: argparse.Namespace) -> int:
    from uniret.data.fetch import fetch_dataset

    path = fetch_dataset(args.name, args.dest, url=args.url, sha256=args.sha256, force=args.force)
    print(f"{args.name}: ready at {path}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="fetch public BEIR datasets", description="Dataset utilities.")
    dsub = p.add_subparsers(dest="data_command", metavar="<action>", required=True)
    f = dsub.add_parser("fetch", help="download, verify (md5/sha256) and unpack a BEIR dataset zip")
    f.add_argument("name", help="BEIR dataset name, e.g. scifact, nfcorpus, fiqa")
    f.add_argument("--dest", default="data", help="folder to unpack into (default: ./data)")
    f.add_argument("--url", default=None, help="zip URL (default: the public BEIR mirror for NAME)")
    f.add_argument("--sha256", default=None, help="expected sha256 or md5 hex digest of the zip (default: the md5 BEIR publishes for NAME)")
    f.add_argument("--force", action="store_true", help="re-download even if the dataset exists")
    f.set_defaults(func=_fetch)
