"""Milvus's own BM25 (a BM25 function on a text field) against the bundle's Lucene BM25, on the same
test queries: which of the two ways uniret could serve BM25 from Milvus ranks as the bundle does.

Usage: python lab/milvus_bm25_function.py --artifacts artifacts --uri /tmp/bm25fn.db \
           [--datasets scifact nfcorpus] [--params params.yaml --profile cpu] \
           [--out lab/results/milvus_bm25_function.json]

Per dataset: the validated corpus (title + text, as uniret's BM25 index holds it) goes into a
collection with Milvus's `english` analyzer (standard tokenizer, lowercase, Snowball English
stemmer, English stop words) and the bundle's k1 and b; the test queries are searched there and in
the bm25 stage's Lucene index (Anserini's Porter stemmer and stop words, one-byte length norms).
Reported: the share of queries with the same top-10 ids, and nDCG@10 of both. The other way,
Lucene's own term weights exported as a sparse field (uniret.milvus), is measured by
`uniret export milvus-parity`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

TEXT, VECTOR = "text", "bm25"


def build(client, name: str, docs, k1: float, b: float) -> None:
    from pymilvus import DataType, Function, FunctionType

    if client.has_collection(name):
        client.drop_collection(name)
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("row", DataType.INT64, is_primary=True)
    schema.add_field(TEXT, DataType.VARCHAR, max_length=65535, enable_analyzer=True,
                     analyzer_params={"type": "english"})
    schema.add_field(VECTOR, DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(Function(name="bm25", function_type=FunctionType.BM25, input_field_names=[TEXT],
                                 output_field_names=[VECTOR]))
    index = client.prepare_index_params()
    index.add_index(VECTOR, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                    params={"bm25_k1": k1, "bm25_b": b})
    client.create_collection(name, schema=schema, index_params=index)
    for start in range(0, len(docs), 500):
        client.insert(name, [{"row": i, TEXT: docs[i].contents[:60000]} for i in range(start, min(len(docs), start + 500))])
    client.flush(name)
    client.load_collection(name)


def main() -> None:
    from uniret.bench.engine_parity import agreement
    from uniret.bench.modes import effectiveness
    from uniret.milvus.client import connect
    from uniret.retrieval.base import QueryBatch
    from uniret.retrieval.bm25 import Bm25ModeSearcher
    from uniret.runtime import make_context

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", required=True)
    parser.add_argument("--uri", required=True, help="a Milvus Lite file (.db) or a server")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--data", default=None)
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--out", default="lab/results/milvus_bm25_function.json")
    args = parser.parse_args()
    ctx = make_context(args.params, args.profile, args.data, args.artifacts)
    bm25 = ctx.params.section("bm25")
    client = connect(args.uri)
    results = {"analyzer": "english", "k1": bm25.k1, "b": bm25.b, "datasets": {}}
    for name in args.datasets or ctx.params.section("data").eval_datasets:
        dataset = ctx.dataset(name)
        docs = list(dataset.iter_corpus())
        collection = f"bm25fn_{name}"
        build(client, collection, docs, bm25.k1, bm25.b)
        queries = dataset.split_queries("test")
        lucene = Bm25ModeSearcher(ctx.stage_dir("bm25") / "indexes" / name, bm25).search_batch(
            QueryBatch.from_dict(queries), 10)
        hits = client.search(collection, data=list(queries.values()), anns_field=VECTOR, limit=10,
                             search_params={"metric_type": "BM25"})
        milvus = {qid: {docs[h["id"]].id: abs(float(h["distance"])) for h in row}
                  for qid, row in zip(queries, hits, strict=True)}
        qrels = dataset.qrels("test")
        results["datasets"][name] = {**agreement(lucene, milvus, 10), "ndcg@10_lucene": effectiveness(lucene, qrels, 10),
                                     "ndcg@10_milvus_function": effectiveness(milvus, qrels, 10)}
        print(name, results["datasets"][name], flush=True)
    client.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
