"""`uniret export opensearch`: a bundle as OpenSearch index mapping, bulk NDJSON and hybrid pipeline."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _bundle_dir(args: argparse.Namespace, params) -> Path:
    """--bundle, else the registry's production bundle."""
    if args.bundle:
        return Path(args.bundle)
    from uniret.registry.bundles import bundle_dir
    from uniret.registry.configured import registry_root
    from uniret.registry.pointer import read_pointer

    root = registry_root(params, args.registry)
    pointer = read_pointer(root)
    if pointer is None:
        raise FileNotFoundError(f"{root}: no production bundle; pass --bundle")
    return bundle_dir(root, pointer["version"])


def _opensearch(args: argparse.Namespace) -> int:
    from uniret.config import load_params
    from uniret.export.opensearch import export_bundle

    params = load_params(args.params, args.profile)
    texts = None
    if args.corpus:
        from uniret.data.beir import iter_corpus

        texts = {d.id: d.contents for d in iter_corpus(args.corpus)}
    exported = export_bundle(_bundle_dir(args, params), args.out, params.section("opensearch"),
                             previous_index=args.previous_index, texts=texts)
    print(json.dumps({k: exported[k] for k in ("index", "alias", "num_docs", "dense_dim", "serve_mode", "bulk_files")},
                     indent=2))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a bundle to a distributed search engine",
                       description="Lay a bundle out for an existing distributed engine (serving beyond one machine).")
    psub = p.add_subparsers(dest="export_command", metavar="<engine>", required=True)
    o = psub.add_parser("opensearch", help="index.json, bulk-*.ndjson, search_pipeline.json, alias_actions.json",
                        description="Write the OpenSearch index mapping (knn_vector + rank_features), bulk NDJSON "
                                    "of the bundle's vectors, the hybrid search pipeline and the alias switch.")
    o.add_argument("--params", default="params.yaml", help="params file (section `opensearch`)")
    o.add_argument("--profile", default=None, help="params profile")
    o.add_argument("--bundle", default=None, help="bundle folder (default: the registry's production bundle)")
    o.add_argument("--registry", default=None, help="registry root (default: params registry.root)")
    o.add_argument("--out", required=True, help="output folder (replaced atomically; an existing one only when an earlier export wrote it)")
    o.add_argument("--previous-index", default=None,
                   help="index the alias points at now (alias_actions.json then removes it in the same request)")
    o.add_argument("--corpus", default=None,
                   help="the bundle's corpus.jsonl: adds the documents' text (the BM25 clause of hybrid_fast)")
    o.set_defaults(func=_opensearch)
