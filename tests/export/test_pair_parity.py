"""ONNX parity of the default recipe's pair (MiniLM dense + SPLADE-tiny lexicon) at its full
document length: both heads, query and document graphs, on real SciFact documents long enough
to fill the 256 tokens."""

from __future__ import annotations

from itertools import islice

import pytest

from uniret.config import load_params
from uniret.data.beir import BeirDataset
from uniret.export.onnx import export_encoders
from uniret.export.parity import check_parity
from uniret.retrieval.encoding import TorchTextEncoder
from uniret.retrieval.onnx_encoder import OnnxEncoder

pytestmark = pytest.mark.slow


def test_pair_onnx_matches_torch_at_the_default_length(repo_root, shared_data, tmp_path):
    from uniret.models.factory import build_model

    params = load_params(repo_root / "params.yaml", "cpu")
    cfg = params.section("model").recipes["hybrid"].model
    assert cfg.arch == "pair" and cfg.doc_max_length >= 256
    model = build_model(cfg).eval()
    tok = model.tokenizer
    ds = BeirDataset(shared_data / "scifact", "scifact")
    queries = list(islice(ds.split_queries("train").values(), 8))
    # the longest of the first documents: the graph must hold at the full length, not only short inputs
    docs = sorted((d.contents for d in islice(ds.iter_corpus(), 120)), key=len, reverse=True)[:12]
    assert max(len(tok(d)["input_ids"]) for d in docs) > cfg.doc_max_length
    export_cfg = params.section("index").export
    outputs = export_encoders(model, tok, tmp_path, export_cfg, cfg.query_max_length, cfg.doc_max_length)
    assert outputs["query.onnx"] == ["dense", "sparse"] and outputs["doc.onnx"] == ["dense", "sparse"]
    torch_enc = TorchTextEncoder(model, tok, 4, cfg.query_max_length, cfg.doc_max_length)
    onnx_enc = OnnxEncoder(tmp_path, tok, 4, cfg.query_max_length, cfg.doc_max_length)
    figures = check_parity(torch_enc, onnx_enc, queries, docs, export_cfg.parity)
    for key in ("query_dense_min_cosine", "doc_dense_min_cosine", "query_sparse_min_cosine", "doc_sparse_min_cosine"):
        assert figures[key] >= export_cfg.parity.min_cosine, key
