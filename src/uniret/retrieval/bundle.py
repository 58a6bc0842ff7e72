"""The index bundle: everything retrieval needs for one corpus, and `load_searchers` to open it.

Layout (written by uniret.stages.index, published as-is by promote, read by evaluate and serving):

    manifest.json     model config, index types, retrieval/bm25 params, metrics, parity figures
    onnx/query.onnx   query encoder (ONNX Runtime encodes queries at serving time)
    onnx/doc.onnx     document encoder (for corpora encoded later, e.g. zero-shot eval sets)
    tokenizer/        the model's tokenizer
    dense.faiss       faiss index of the document vectors (type per retrieval.dense)
    impact/           Lucene impact index (integer impacts round(quant*w), optional top-N)
    impacts.npz       the same impacts as a CSR matrix (exhaustive scoring; the in-memory lexical
                      backend, retrieval.lexical_backend)
    bm25/             Lucene BM25 index of the same corpus (reference mode)
    bm25_weights.npz  Lucene's BM25 weight of every (doc, term) of bm25/ as a CSR matrix, and
    bm25_terms.json   its column terms: hybrid_fast's BM25 route in memory (retrieval/bm25_memory.py)
    static/           the query side with no transformer: token weight table + static dense tower
                      (retrieval/static_query.py; the dense_static, lexical_static, hybrid_fast modes)
    docids.json       row -> doc id, shared by dense.faiss, impacts.npz
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import scipy.sparse as sp

from uniret.config.loader import build
from uniret.config.retrieval import RetrievalConfig
from uniret.config.sections import Bm25Config
from uniret.core.errors import InputFileError, reading
from uniret.core.jsonio import read_json
from uniret.retrieval.base import Searcher
from uniret.retrieval.dense import doc_vectors, load_faiss_index, mapped_vectors, to_search_device
from uniret.retrieval.lexical import LuceneImpactIndex, MemoryImpactIndex
from uniret.retrieval.modes import CorpusIndex, build_searchers
from uniret.retrieval.onnx_encoder import OnnxEncoder
from uniret.retrieval.sparse import vocab_tokens
from uniret.retrieval.static_query import STATIC_DIR, load_static_query

log = logging.getLogger("uniret.retrieval")

MANIFEST = "manifest.json"
ONNX_DIR = "onnx"
TOKENIZER_DIR = "tokenizer"
DENSE_FILE = "dense.faiss"
# a flat index's vectors again, aligned for numpy: mapped by every serving process (E102)
DENSE_VECTORS_FILE = "dense.npy"
IMPACT_DIR = "impact"
IMPACTS_FILE = "impacts.npz"
BM25_DIR = "bm25"
BM25_WEIGHTS_FILE = "bm25_weights.npz"
BM25_TERMS_FILE = "bm25_terms.json"
DOCIDS_FILE = "docids.json"
FORMAT_VERSION = 1


@dataclass
class Bundle:
    """An opened bundle: manifest, configs, query/doc encoder and the corpus's index structures."""

    path: Path
    manifest: dict[str, Any]
    retrieval: RetrievalConfig
    bm25: Bm25Config
    encoder: OnnxEncoder
    index: CorpusIndex

    @property
    def has_gate(self) -> bool:
        """Whether the query graph outputs a query gate (read from the manifest: no session loaded)."""
        recorded = ((self.manifest.get("onnx") or {}).get("outputs") or {}).get(self.encoder.query_file.replace(".int8", ""))
        if recorded is not None:
            return "gate" in recorded
        return "gate" in self.encoder.outputs(is_query=True)


def read_bundle_manifest(bundle_dir: str | Path) -> dict[str, Any]:
    """The bundle's manifest.json, with a clear error when the folder is not a bundle."""
    path = Path(bundle_dir) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not an index bundle (no manifest.json); run `uniret index`")
    manifest = read_json(path)
    if manifest.get("format") != FORMAT_VERSION:
        raise InputFileError(f"{path}: bundle format {manifest.get('format')!r}, this uniret reads {FORMAT_VERSION}")
    return manifest


def load_docids(bundle_dir: str | Path) -> list[str]:
    """The bundle's row -> doc id list (docids.json); DataError naming the file (links resolved) when damaged."""
    return read_json(Path(bundle_dir).resolve() / DOCIDS_FILE, list)


def load_impacts(bundle_dir: str | Path) -> sp.csr_matrix:
    """The bundle's impacts.npz as a CSR matrix; InputFileError naming the file when damaged."""
    path = Path(bundle_dir) / IMPACTS_FILE
    with reading(path, "impacts matrix (.npz)"):
        return sp.load_npz(path).tocsr()


def load_tokenizer(bundle_dir: str | Path):
    """The bundle's tokenizer (transformers, local files only); InputFileError when damaged.

    The class its tokenizer_config.json names is loaded directly: AutoTokenizer would also import
    torch (through transformers' model configs), which a serving process never needs (about 190 MB
    of RSS and 3 s of start-up); AutoTokenizer only when the folder names no class transformers has."""
    import transformers

    path = Path(bundle_dir) / TOKENIZER_DIR
    with reading(path, "tokenizer folder"):
        config_file = path / "tokenizer_config.json"
        config = json.loads(config_file.read_text(encoding="utf-8")) if config_file.is_file() else {}
        named = config.get("tokenizer_class") if isinstance(config, dict) else None
        cls = getattr(transformers, named, None) if isinstance(named, str) else None
        return (cls or transformers.AutoTokenizer).from_pretrained(str(path), local_files_only=True)


def choose_lexical_backend(cfg: RetrievalConfig, n_docs: int, has_lucene: bool, has_impacts: bool) -> str | None:
    """`lucene`, `memory` or None (no lexical index) per `cfg.lexical_backend`; both rank identically.

    `auto` keeps the impacts in memory up to `cfg.memory_max_docs` documents (no JNI call per hit,
    no Java lock) and uses Lucene above, or whichever of the two the bundle has.
    """
    wanted = cfg.lexical_backend
    if wanted == "auto":
        wanted = "memory" if has_impacts and (n_docs <= cfg.memory_max_docs or not has_lucene) else "lucene"
    have = {"lucene": has_lucene, "memory": has_impacts}
    if have[wanted]:
        return wanted
    if cfg.lexical_backend != "auto" and any(have.values()):
        missing = IMPACT_DIR + "/" if wanted == "lucene" else IMPACTS_FILE
        raise ValueError(f"retrieval.lexical_backend={wanted}: the bundle has no {missing}")
    return None


def fusion_weights_of(manifest: dict[str, Any], other_corpus: bool = False) -> dict[str, list[float]]:
    """{fusion mode: weights} the index stage learned on the dev splits ({} for older bundles).
    `other_corpus`: the weights for a corpus other than the bundle's (learned on the other corpora's
    dev sets; the same weights where the bundle has none of those)."""
    learned = (manifest.get("fusion") or {}).get("modes") or {}
    key = "zero_shot_weights" if other_corpus else "weights"
    return {mode: [float(w) for w in entry.get(key) or entry["weights"]] for mode, entry in learned.items()}


def open_bundle(bundle_dir: str | Path, cfg: RetrievalConfig | None = None, threads: int | None = None,
                backend_cfg: RetrievalConfig | None = None, structures: bool = True) -> Bundle:
    """Open a bundle; `cfg` overrides the retrieval params it was built with (query side only:
    modes, k, uni K, fusion, lexical backend; the index structures are what they are).
    `backend_cfg` overrides only the lexical backend choice (lexical_backend, memory_max_docs) and pruning:
    serving and the bench pass the current params so the bundle's other params stay in force.
    `structures=False` opens the query side only (encoders, doc ids, learned weights, static
    tables, the BM25 folder's path): an engine such as Milvus holds the index structures."""
    path = Path(bundle_dir)
    manifest = read_bundle_manifest(path)
    with reading(path / MANIFEST, "bundle manifest"):  # a field missing: not a manifest the index stage wrote
        bm25_params = manifest["params"]["bm25"]
        lengths = manifest["query_max_length"], manifest["doc_max_length"]
        built_with = built_retrieval(manifest, path)
    cfg = _learned_fast_runs(manifest, cfg or built_with)
    if backend_cfg is not None:  # how large corpora are searched is the current params' choice (E52)
        cfg = dataclasses.replace(cfg, pruning=backend_cfg.pruning)
    bm25_cfg = build(Bm25Config, bm25_params, f"{path / MANIFEST}: params.bm25")
    tokenizer = load_tokenizer(path)
    # lazy: the query graph loads on the first transformer-mode query, never for the static modes
    encoder = OnnxEncoder(path / ONNX_DIR, tokenizer, cfg.query_batch_size, *lengths, threads, lazy=True)
    docids = load_docids(path)
    index = CorpusIndex(docids=docids)
    if structures:
        _open_structures(path, index, cfg, built_with, backend_cfg, tokenizer)
    index.bm25_weight = (manifest.get("model") or {}).get("bm25_weight")
    index.fusion_weights = fusion_weights_of(manifest)
    with reading(path / STATIC_DIR, "static query tables"):
        index.static_query = load_static_query(path / STATIC_DIR, tokenizer, lengths[0])
    if index.static_query is not None:
        index.provenance["static"] = f"bundle static query tables ({STATIC_DIR}/)"
    if (path / BM25_DIR).is_dir():
        index.bm25_dir = path / BM25_DIR
        index.provenance["bm25"] = f"bundle Lucene BM25 index ({BM25_DIR}/)"
    if structures and (path / BM25_WEIGHTS_FILE).is_file():
        index.bm25_weights = load_bm25_weights(path, len(docids))
    return Bundle(path, manifest, cfg, bm25_cfg, encoder, index)


def load_bm25_weights(bundle_dir: Path, n_docs: int) -> tuple[list[str], sp.csr_matrix]:
    """(terms, [docs, terms] CSR) of the bundle's bm25_weights.npz / bm25_terms.json; InputFileError
    naming the file when one is damaged or they disagree with the bundle's doc ids."""
    path = bundle_dir / BM25_WEIGHTS_FILE
    with reading(path, "BM25 term weights (.npz)"):
        weights = sp.load_npz(path).tocsr()
    terms = read_json(bundle_dir / BM25_TERMS_FILE, list)
    if weights.shape != (n_docs, len(terms)):
        raise InputFileError(f"{path}: shape {weights.shape}, but the bundle has {n_docs} doc ids and "
                             f"{bundle_dir / BM25_TERMS_FILE} {len(terms)} terms")
    return terms, weights


def _learned_fast_runs(manifest: dict[str, Any], cfg: RetrievalConfig) -> RetrievalConfig:
    """`cfg` with hybrid_fast fusing the runs the bundle learned its weights for (a bundle built before
    params changed fast_runs keeps its own: the weights belong to those runs)."""
    runs = (((manifest.get("fusion") or {}).get("modes") or {}).get("hybrid_fast") or {}).get("runs")
    if not runs or list(runs) == list(cfg.fusion.fast_runs):
        return cfg
    return dataclasses.replace(cfg, fusion=dataclasses.replace(cfg.fusion, fast_runs=list(runs)))


def built_retrieval(manifest: dict[str, Any], path: Path) -> RetrievalConfig:
    """The retrieval params the bundle was built with (its index types, its quantization)."""
    built_params = manifest["params"]["retrieval"]
    if "bm25_signal" not in (built_params.get("fusion") or {}):  # built before RM3: its weights fuse plain BM25
        built_params = {**built_params, "fusion": {**(built_params.get("fusion") or {}), "bm25_signal": "bm25"}}
    return build(RetrievalConfig, built_params, f"{path / MANIFEST}: params.retrieval")


def _open_structures(path: Path, index: CorpusIndex, cfg: RetrievalConfig, built_with: RetrievalConfig,
                     backend_cfg: RetrievalConfig | None, tokenizer) -> None:
    """The bundle's dense and lexical index structures into `index`."""
    docids = index.docids
    quant = built_with.lexical.quant  # the impacts were quantized with the build-time quant
    if (path / DENSE_FILE).is_file():
        # a bundle written before E102 has no dense.npy: its vectors are read into this process
        mapped = built_with.dense.type == "flat" and (path / DENSE_VECTORS_FILE).is_file()
        cpu_index = load_faiss_index(path / DENSE_FILE, mapped)
        index.doc_vectors = mapped_vectors(path / DENSE_VECTORS_FILE, cpu_index) if mapped else doc_vectors(cpu_index)
        # placement follows the current params (use_gpu), the index type is the built one
        index.dense = to_search_device(cpu_index, dataclasses.replace(cfg.dense, type=built_with.dense.type))
        index.provenance["dense"] = f"bundle faiss {built_with.dense.type} ({DENSE_FILE})"
    if (path / IMPACTS_FILE).is_file():
        index.impacts = MemoryImpactIndex.from_impacts(docids, load_impacts(path), quant, cfg.pruning)
    backend = choose_lexical_backend(backend_cfg or cfg, len(docids), (path / IMPACT_DIR).is_dir(),
                                     index.impacts is not None)
    if backend == "lucene":
        index.lexical = LuceneImpactIndex(path / IMPACT_DIR, docids, vocab_tokens(tokenizer), quant)
        index.provenance["lexical"] = f"bundle Lucene impact index ({IMPACT_DIR}/)"
    elif backend == "memory":
        index.lexical = index.impacts
        index.provenance["lexical"] = f"bundle impacts in memory ({IMPACTS_FILE}, inverted index)"


def load_searchers(
    bundle_dir: str | Path, cfg: RetrievalConfig | None = None, modes: list[str] | None = None
) -> dict[str, Searcher]:
    """{mode: Searcher} over a bundle, queries encoded by its ONNX query encoder.

    Modes default to those the bundle was built with (or `cfg.modes`); a mode whose inputs the
    bundle lacks (e.g. uni_gated without a query gate) is skipped with a warning.
    """
    bundle = open_bundle(bundle_dir, cfg)
    return build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, bundle.has_gate, modes)
