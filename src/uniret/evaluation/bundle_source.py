"""Run source "bundle": every retrieval mode of the index stage's bundle, on every eval dataset
(or of any bundle given to it: the gate re-scores the production bundle with it).

Where each run comes from (recorded in `provenance` and in the evaluate log):
- the bundle's own corpus (data.train_dataset, same doc ids): the bundle's faiss index, Lucene impact index and
  BM25 index, queries encoded by the bundle's ONNX query encoder: exactly what serving runs;
- any other eval dataset: its corpus encoded by the bundle's ONNX document encoder into in-memory
  structures (faiss per retrieval.dense, exact sparse products with the same quantization as the
  Lucene impact index), queries by the ONNX query encoder; BM25 there uses that dataset's index
  from the bm25 stage. Corpus encodings are cached under the checkpoint's identity
  (uniret.retrieval.corpus_cache.encoder_key), shared with the "trained" source: the checkpoint
  is encoded once per corpus, by ONNX Runtime (faster on CPU) when this source runs first.
Systems are named after their mode ("dense", "lexical", "uni", "hybrid", ...). The bundle's
"bm25" mode is not reported: the bm25 source already scores the same Lucene BM25 runs.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from uniret.evaluation.sources import Runs, SourceUnavailable, eval_datasets
from uniret.retrieval.corpus_cache import checkpoint_key, int8_form
from uniret.retrieval.onnx_encoder import DOC_INT8_FILE
from uniret.runtime import StageContext
from uniret.utils.files import hash_path

log = logging.getLogger("uniret.evaluation")

BUNDLE = "bundle"  # artifacts/index/bundle
BM25_INDEXES = "indexes"  # artifacts/bm25/indexes/<dataset>
SKIPPED_MODES = ("bm25",)  # scored by the bm25 source


def bundle_encoder_key(manifest: dict, onnx_dir: Path, batch_size: int) -> str:
    """Cache identity of the bundle's document encodings at `batch_size`: its checkpoint's (as the
    torch sources key it, unless the bundle encodes documents with an int8 graph, whose encodings
    depend on the batch size), else its graphs'."""
    info = manifest.get("model") or {}
    int8_batch = batch_size if (onnx_dir / DOC_INT8_FILE).is_file() else None
    if info.get("config") and info.get("checkpoint_sha256"):
        return checkpoint_key(info["config"], info["checkpoint_sha256"], int8_batch)
    form = f"|{int8_form(int8_batch)}" if int8_batch is not None else ""
    return "onnx-" + hashlib.sha256(f"{hash_path(onnx_dir)}|{manifest['doc_max_length']}{form}".encode()).hexdigest()[:24]


class BundleSource:
    """Runs of every retrieval mode (params `retrieval.modes`) from artifacts/index/bundle."""

    name = "bundle"
    required = False  # the evaluate stage runs before the index stage exists (BM25 only)
    save_runs = True

    def __init__(self, modes: list[str] | None = None, bundle: Path | None = None) -> None:
        self.modes = modes  # None: every mode of params `retrieval.modes`
        self.bundle = bundle  # None: the index stage's bundle; else any bundle (the gate's production)
        self.provenance: dict[str, dict[str, str]] = {}  # {dataset: {mode: where from}}

    def _bundle_dir(self, ctx: StageContext) -> Path:
        if self.bundle is not None:
            if not self.bundle.is_dir():
                raise SourceUnavailable(f"{self.bundle}: bundle folder not found")
            return self.bundle
        try:
            return ctx.require("index") / BUNDLE
        except FileNotFoundError as exc:
            raise SourceUnavailable(str(exc)) from exc

    def inputs(self, ctx: StageContext) -> dict[str, Path]:
        return {"bundle": self.bundle if self.bundle is not None else ctx.stage_dir("index") / BUNDLE}

    def runs(self, ctx: StageContext) -> Runs:
        from uniret.retrieval.base import encode_queries
        from uniret.retrieval.bundle import open_bundle
        from uniret.retrieval.modes import build_searchers

        cfg = ctx.params.section("retrieval")
        data = ctx.params.section("data")
        bundle = open_bundle(self._bundle_dir(ctx), cfg)
        modes = [m for m in (self.modes or cfg.modes) if m not in SKIPPED_MODES]
        indexes = DatasetIndexes(ctx, bundle)
        runs: Runs = {}
        for name in eval_datasets(ctx):
            dataset = ctx.dataset(name)
            index = indexes.index(name, dataset)
            searchers = build_searchers(index, cfg, bundle.encoder, bundle.bm25, bundle.has_gate, modes)
            batch = encode_queries(dataset.split_queries(data.eval_split), bundle.encoder)
            for mode, searcher in searchers.items():
                runs.setdefault(mode, {})[name] = searcher.search_batch(batch, cfg.k)
            self.provenance[name] = {m: index.provenance.get(m, "derived from the modes it fuses or re-scores")
                                     for m in searchers}
            log.info("bundle source %s: %s", name, self.provenance[name])
        return runs


class DatasetIndexes:
    """The index structures a bundle searches each eval dataset with: its own for its own corpus,
    else the dataset's corpus encoded by the bundle's document encoder (cached) in memory, with that
    dataset's BM25 index from the bm25 stage. `bundle`: opened with the current retrieval params."""

    def __init__(self, ctx: StageContext, bundle) -> None:
        from uniret.retrieval.bundle import ONNX_DIR, TOKENIZER_DIR
        from uniret.retrieval.sharded import EncoderSpec

        self.ctx = ctx
        self.bundle = bundle
        encoding = ctx.params.section("encoding")
        self.cache_root = ctx.artifacts / encoding.cache_dir
        # corpora go through at the corpus-pass batch size, as the index stage encodes them (the
        # bundle's own encoder batches queries at retrieval.query_batch_size)
        self.doc_encoder = bundle.encoder.with_batch_size(encoding.batch_size)
        self.model_id = bundle_encoder_key(bundle.manifest, bundle.path / ONNX_DIR, encoding.batch_size)
        self.dist = ctx.params.section("distributed")  # encode_shards > 1: worker processes rebuild the ONNX encoder
        self.spec = EncoderSpec("onnx", str(bundle.path / ONNX_DIR), encoding.batch_size,
                                bundle.manifest["query_max_length"], bundle.manifest["doc_max_length"],
                                tokenizer=str(bundle.path / TOKENIZER_DIR))

    def index(self, name: str, dataset):
        """The CorpusIndex of dataset `name` (a BeirDataset)."""
        from uniret.retrieval.bundle import fusion_weights_of
        from uniret.retrieval.corpus_cache import cached_corpus_encoding
        from uniret.retrieval.modes import memory_corpus_index
        from uniret.retrieval.sharded import encode_corpus

        bundle, dist = self.bundle, self.dist
        docs = list(dataset.iter_corpus())
        docids = [d.id for d in docs]
        # the bundle's own index only for its own corpus: a folder of the same name holding other
        # documents (`uniret evaluate --data DIR`) is encoded like any other corpus
        if name == bundle.manifest["train_dataset"] and docids == list(bundle.index.docids):
            return bundle.index
        encoded = cached_corpus_encoding(
            self.cache_root, self.model_id, dataset.corpus_path, docids,
            lambda docs=docs: encode_corpus(self.doc_encoder, self.spec, [d.contents for d in docs],
                                            [d.id for d in docs], dist.encode_shards, dist.encode_threads),
            label=f"bundle/{name}",
        )
        bm25_dir = self.ctx.stage_dir("bm25") / BM25_INDEXES / name
        static = bundle.index.static_query
        if static is not None and self.ctx.params.section("index").static_query.corpus_idf:
            static = static.for_corpus([d.contents for d in docs], bundle.manifest["doc_max_length"])
        return memory_corpus_index(docids, encoded, bundle.retrieval, bm25_dir if bm25_dir.is_dir() else None,
                                   bundle.index.bm25_weight, fusion_weights_of(bundle.manifest, other_corpus=True),
                                   static)
