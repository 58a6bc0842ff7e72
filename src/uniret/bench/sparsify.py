"""Top-N sparsification curve (UnifieR Table 6): keep each document's N largest term weights,
rebuild the Lucene impact index, and measure lexical and uni retrieval (QPS, nDCG) for each N.

The documents' weights come from the bundle's impacts.npz (integer impacts round(quant*w));
dividing by quant gives weights that re-quantize to exactly the same integers. Queries are
encoded once by the bundle's ONNX query encoder, so the timings here are retrieval only: the
encoder cost is the same for every N (and is measured in the modes and encoders sections).
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from uniret.bench.modes import effectiveness, time_queries
from uniret.bench.sizes import path_bytes
from uniret.bench.stats import latency_summary
from uniret.retrieval.base import QueryBatch
from uniret.retrieval.lexical import LexicalSearcher, LuceneImpactIndex
from uniret.retrieval.sparse import iter_term_rows, keep_top_n
from uniret.retrieval.uni import UniSearcher

log = logging.getLogger("uniret.bench")


def _pre_encoded(searcher, encoded: dict[str, QueryBatch], k: int):
    """search({qid: text}) on the query's cached encoding: times retrieval only."""

    def call(queries: dict[str, str]):
        (qid,) = queries
        return searcher.search_batch(encoded[qid], k)

    return call


def encode_each(encoder, queries: dict[str, str]) -> dict[str, QueryBatch]:
    """One encoded single-query batch per query (what a serving request carries)."""
    out = {}
    for qid, text in queries.items():
        batch = QueryBatch(ids=[qid], texts=[text])
        batch.encoded = encoder.encode([text], is_query=True)
        out[qid] = batch
    return out


def top_n_curve(bundle, queries: dict[str, str], qrels: dict, top_n: list[int | None], k: int, eval_k: int,
                warmup: int, threads: int) -> dict:
    """One row per N (None = all terms): active terms/doc, index bytes/doc, lexical and uni QPS/latency/nDCG."""
    from uniret.lexical.impact import build_impact_index
    from uniret.retrieval.sparse import vocab_tokens

    bundle_dir = Path(bundle.path)
    impacts_path = bundle_dir / "impacts.npz"
    if not impacts_path.is_file() or bundle.index.doc_vectors is None:
        return {"skipped": "bundle has no impacts.npz or no dense vectors"}
    quant = bundle.manifest["params"]["retrieval"]["lexical"]["quant"]
    weights = sp.load_npz(impacts_path).astype(np.float32) / np.float32(quant)
    weights = sp.csr_matrix(weights)
    docids = bundle.index.docids
    vocab = vocab_tokens(bundle.encoder.tokenizer)
    encoded = encode_each(bundle.encoder, queries)
    rows = []
    with tempfile.TemporaryDirectory(prefix="uniret-topn-") as tmp:
        for n in top_n:
            kept = keep_top_n(weights, n)
            index_dir = Path(tmp) / f"top-{n or 'all'}"
            build_impact_index(iter_term_rows(docids, kept, vocab), index_dir, quant, None, threads=threads,
                               total=len(docids))
            lucene = LuceneImpactIndex(index_dir, docids, vocab, quant, threads=threads)
            row = {
                "top_n": n if n is not None else "all",
                "mean_active_terms_doc": round(float(np.diff(kept.indptr).mean()), 2),
                "bytes_per_doc_sparse": round(path_bytes(index_dir) / max(len(docids), 1), 2),
            }
            searchers = {
                "lexical": LexicalSearcher(lucene, bundle.encoder),
                "uni": UniSearcher(lucene, bundle.index.doc_vectors, bundle.retrieval.uni.k, encoder=bundle.encoder),
            }
            for mode, searcher in searchers.items():
                latencies, run = time_queries(_pre_encoded(searcher, encoded, k), queries, warmup,
                                              f"top-{row['top_n']} {mode}")
                summary = latency_summary(latencies)
                row[mode] = {"qps": summary["qps"], "p50_ms": summary["p50_ms"],
                             f"ndcg@{eval_k}": effectiveness(run, qrels, eval_k)}
            lucene.close()
            log.info("top-N %s: %s", row["top_n"], row)
            rows.append(row)
    return {"note": "retrieval only (queries pre-encoded); Lucene impact index rebuilt per N", "rows": rows}
