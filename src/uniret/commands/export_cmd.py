"""`uniret export opensearch`: a bundle as OpenSearch index mapping, bulk NDJSON and hybrid pipeline
(checked against the engine's documented schemas only); `uniret export milvus`: a bundle written into
a Milvus collection, and `uniret export milvus-parity`: Milvus against the in-process searchers."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from uniret.commands.outputs import output_argument


def _bundle_dir(args: argparse.Namespace, params) -> Path:
    """--bundle, else the registry's production bundle; verified against its checksums first (a
    damaged bundle is never exported under its genuine name)."""
    from uniret.registry.bundles import bundle_dir
    from uniret.registry.configured import registry_root
    from uniret.registry.integrity import verified_bundle
    from uniret.registry.pointer import read_pointer

    root = registry_root(params, getattr(args, "registry", None))
    if args.bundle:
        return verified_bundle(args.bundle, root, "not exported")
    pointer = read_pointer(root)
    if pointer is None:
        raise FileNotFoundError(f"{root}: no production bundle; pass --bundle")
    return verified_bundle(bundle_dir(root, pointer["version"]), root, "not exported")


def _opensearch(args: argparse.Namespace) -> int:
    from uniret.config import load_params
    from uniret.export.opensearch import export_bundle
    from uniret.utils.owned import check_output_path

    params = load_params(args.params, args.profile)
    check_output_path(args.out)  # a refused --out costs nothing: before the bundle is verified or read
    texts = None
    if args.corpus:
        from uniret.data.beir import iter_corpus

        texts = {d.id: d.contents for d in iter_corpus(args.corpus)}
    exported = export_bundle(_bundle_dir(args, params), args.out, params.section("opensearch"),
                             previous_index=args.previous_index, texts=texts)
    print(json.dumps({k: exported[k] for k in ("index", "alias", "num_docs", "dense_dim", "serve_mode", "bulk_files")},
                     indent=2))
    return 0


def _milvus_cfg(args: argparse.Namespace, params):
    """The `milvus` section with the command line's --uri and --dense-index."""
    from dataclasses import replace

    cfg = params.section("milvus")
    return replace(cfg, uri=args.uri or cfg.uri, dense_index=getattr(args, "dense_index", None) or cfg.dense_index)


def _milvus(args: argparse.Namespace) -> int:
    from uniret.config import load_params
    from uniret.milvus.bundles import export_bundle, switch_alias
    from uniret.milvus.client import connect_configured

    params = load_params(args.params, args.profile)
    cfg = _milvus_cfg(args, params)
    bundle = _bundle_dir(args, params)
    client = connect_configured(cfg)
    try:
        out = {"uri": cfg.uri, "bundle": str(bundle), **export_bundle(client, cfg, bundle, not args.no_progress).summary()}
        if args.switch_alias:
            out["alias"] = switch_alias(client, cfg, bundle)
    finally:
        client.close()
    print(json.dumps(out, indent=2))
    return 0


def _milvus_parity(args: argparse.Namespace) -> int:
    from uniret.bench.milvus_parity import run_parity
    from uniret.config import load_params

    params = load_params(args.params, args.profile)
    report = run_parity(args, params, _milvus_cfg(args, params), _bundle_dir(args, params) if (
        args.bundle or args.registry) else None)
    print(json.dumps(report["summary"], indent=2))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a bundle to a distributed search engine",
                       description="Lay a bundle out for an existing distributed engine (serving beyond one machine).")
    psub = p.add_subparsers(dest="export_command", metavar="<engine>", required=True)
    o = psub.add_parser("opensearch", help="index.json, bulk-*.ndjson, search_pipeline.json, alias_actions.json "
                                           "(schema-checked only)",
                        description="Write the OpenSearch index mapping (knn_vector + rank_features), bulk NDJSON "
                                    "of the bundle's vectors, the hybrid search pipeline and the alias switch. "
                                    "Checked against OpenSearch's documented schemas only: no engine has run it "
                                    "(`uniret export milvus` is the export checked against a running engine).")
    o.add_argument("--params", default="params.yaml", help="params file (section `opensearch`)")
    o.add_argument("--profile", default=None, help="params profile")
    o.add_argument("--bundle", default=None, help="bundle folder (default: the registry's production bundle)")
    o.add_argument("--registry", default=None, help="registry root (default: params registry.root)")
    output_argument(o, "--out", kind="replaced", required=True, help="output folder (replaced atomically; an existing one only when an earlier export wrote it)")
    o.add_argument("--previous-index", default=None,
                   help="index the alias points at now (alias_actions.json then removes it in the same request)")
    o.add_argument("--corpus", default=None,
                   help="the bundle's corpus.jsonl: adds the documents' text (the BM25 clause of hybrid_fast)")
    o.set_defaults(func=_opensearch)
    m = psub.add_parser("milvus", help="write the bundle into a Milvus collection (and move the serving alias)",
                        description="Write the bundle's doc ids, dense vectors, learned-sparse impacts and Lucene BM25 "
                                    "term weights into a Milvus collection named by its content hash, in batches; a "
                                    "re-run of the same bundle changes nothing; a partial collection left by a killed "
                                    "export is rebuilt (docs/milvus.md).")
    _common_milvus(m)
    m.add_argument("--bundle", default=None, help="bundle folder (default: the registry's production bundle)")
    m.add_argument("--registry", default=None, help="registry root (default: params registry.root)")
    m.add_argument("--switch-alias", action="store_true",
                   help="then point the serving alias (params milvus.alias) at it: what promotion does")
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    m.set_defaults(func=_milvus)
    q = psub.add_parser("milvus-parity", help="Milvus against the in-process searchers: parity and latency",
                        description="Export every eval dataset's index structures (exact FLAT dense) into Milvus and "
                                    "compare each mode's runs with the in-process searcher's on its test queries "
                                    "(top 10, nDCG@10, scores), then time both on the same queries; writes "
                                    "milvus_parity.json and .md into --out.")
    _common_milvus(q, dense_index=False)
    q.add_argument("--bundle", default=None, help="bundle folder (default: artifacts/index/bundle)")
    q.add_argument("--registry", default=None, help="registry root: its production bundle")
    q.add_argument("--data", default=None, help="data root with BEIR folders (default: $UNIRET_DATA, params)")
    q.add_argument("--artifacts", default=None, help="artifacts folder holding validate, bm25 and the encodings cache")
    output_argument(q, "--out", kind="folder", required=True, help="output folder for milvus_parity.json and milvus_parity.md")
    q.add_argument("--datasets", nargs="+", default=None, help="eval datasets to compare (default: data.eval_datasets)")
    q.add_argument("--max-queries", type=int, default=None, help="test queries per dataset (default: all)")
    q.add_argument("--latency-queries", type=int, default=200, help="queries timed per mode and engine (0: no timing)")
    q.add_argument("--clients", type=int, default=16, help="concurrent clients of the throughput figure")
    q.set_defaults(func=_milvus_parity)


def _common_milvus(p: argparse.ArgumentParser, dense_index: bool = True) -> None:
    p.add_argument("--params", default="params.yaml", help="params file (section `milvus`)")
    p.add_argument("--profile", default=None, help="params profile")
    p.add_argument("--uri", default=None, help="http://host:19530 (a cluster) or a Milvus Lite file such as ./milvus.db "
                                               "(default: params milvus.uri)")
    if dense_index:
        p.add_argument("--dense-index", choices=("bundle", "flat"), default=None,
                       help="bundle: the bundle's dense index type; flat: exact (default: params milvus.dense_index)")
