"""ONNX export of the query/document encoders: parity with torch on real SciFact text, dynamic
axes, and a deliberately broken graph failing the parity check with StageFailed."""

from __future__ import annotations

import shutil
from itertools import islice

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from uniret.config import load_params
from uniret.config.models import ModelConfig
from uniret.core.errors import StageFailed
from uniret.data.beir import BeirDataset
from uniret.export.onnx import export_encoders
from uniret.export.parity import check_parity, row_cosines
from uniret.retrieval.encoding import TorchTextEncoder
from uniret.retrieval.onnx_encoder import DOC_FILE, QUERY_FILE, OnnxEncoder

QLEN, DLEN, BATCH = 32, 128, 16


@pytest.fixture(scope="module")
def export_cfg(repo_root):
    """The tiny profile's export settings with the dynamo exporter the product ships (the tiny profile
    itself exports with the legacy one, for the suite's time: E49)."""
    import dataclasses

    return dataclasses.replace(load_params(repo_root / "params.yaml", "tiny").section("index").export, dynamo=True)


@pytest.fixture(scope="module")
def texts(shared_data):
    ds = BeirDataset(shared_data / "scifact", "scifact")
    queries = list(islice(ds.split_queries("train").values(), 12))
    docs = [d.contents for d in islice(ds.iter_corpus(), 40)]
    return queries, docs


@pytest.fixture(scope="module")
def gated_model():
    from uniret.models.factory import build_model

    model = build_model(ModelConfig(arch="unifier", backbone="splade-tiny", gating=True,
                                    query_max_length=QLEN, doc_max_length=DLEN))
    return model.eval(), model.tokenizer


@pytest.fixture(scope="module")
def exported(gated_model, export_cfg, tmp_path_factory):
    model, tokenizer = gated_model
    out = tmp_path_factory.mktemp("onnx")
    outputs = export_encoders(model, tokenizer, out, export_cfg, QLEN, DLEN)
    return out, outputs


def _encoders(gated_model, onnx_dir):
    model, tokenizer = gated_model
    return (TorchTextEncoder(model, tokenizer, BATCH, QLEN, DLEN),
            OnnxEncoder(onnx_dir, tokenizer, BATCH, QLEN, DLEN))


def test_graphs_output_pooled_vectors_not_token_logits(exported, gated_model):
    onnx_dir, outputs = exported
    assert outputs == {QUERY_FILE: ["dense", "sparse", "gate"], DOC_FILE: ["dense", "sparse"]}
    vocab = len(gated_model[1])
    graph = onnx.load(str(onnx_dir / DOC_FILE)).graph
    dims = {o.name: [d.dim_value or d.dim_param for d in o.type.tensor_type.shape.dim] for o in graph.output}
    assert len(dims["sparse"]) == 2 and dims["sparse"][1] == vocab  # [batch, vocab]
    assert isinstance(dims["sparse"][0], str)  # dynamic batch axis
    inputs = {i.name: [d.dim_param for d in i.type.tensor_type.shape.dim] for i in graph.input}
    assert all(inputs["input_ids"])  # both input axes symbolic (dynamic)


def test_parity_passes_on_real_text(exported, gated_model, texts, export_cfg):
    torch_enc, onnx_enc = _encoders(gated_model, exported[0])
    figures = check_parity(torch_enc, onnx_enc, *texts, export_cfg.parity)
    for key in ("query_dense_min_cosine", "doc_dense_min_cosine", "query_sparse_min_cosine", "doc_sparse_min_cosine"):
        assert figures[key] >= 0.9999
    assert figures["dense_top10_overlap"] == figures["sparse_top10_overlap"] == 1.0
    assert figures["gate_max_abs_diff"] < 1e-4


def test_dynamic_batch_and_length(exported, gated_model, texts):
    torch_enc, onnx_enc = _encoders(gated_model, exported[0])
    _, docs = texts
    for batch in (docs[:1], docs[3:10]):  # batch 1 and 7, other lengths than the trace inputs
        a, b = torch_enc.encode(batch, is_query=False), onnx_enc.encode(batch, is_query=False)
        assert row_cosines(a.dense, b.dense).min() >= 0.9999
        assert row_cosines(a.sparse, b.sparse).min() >= 0.9999


def test_encode_texts_api_matches_models_encode(exported, gated_model, texts):
    from uniret.models.encode import encode_texts

    model, tokenizer = gated_model
    queries, _ = texts
    dense_t, sparse_t = encode_texts(model, tokenizer, queries, True, BATCH, QLEN, device="cpu", progress=False)
    onnx_enc = _encoders(gated_model, exported[0])[1]
    dense_o, sparse_o = onnx_enc.encode_texts(queries, True, BATCH, QLEN)
    assert dense_o.shape == dense_t.shape and sparse_o.shape == sparse_t.shape
    assert row_cosines(dense_t, dense_o).min() >= 0.9999
    assert row_cosines(sparse_t, sparse_o).min() >= 0.9999


def _perturb(src_dir, dst_dir, select, scale):
    """Copy both graphs, adding noise to the initializers `select(array)` picks."""
    rng = np.random.default_rng(0)
    dst_dir.mkdir()
    for name in (QUERY_FILE, DOC_FILE):
        model = onnx.load(str(src_dir / name))
        changed = 0
        for init in model.graph.initializer:
            arr = numpy_helper.to_array(init)
            if arr.dtype == np.float32 and select(arr):
                noisy = arr + rng.normal(0, scale * (arr.std() + 1e-3), arr.shape).astype(np.float32)
                init.CopyFrom(numpy_helper.from_array(noisy, init.name))
                changed += 1
        assert changed > 0, f"no initializer selected in {name}"
        onnx.save(model, str(dst_dir / name))
    return dst_dir


def test_perturbed_weights_fail_parity(exported, gated_model, texts, export_cfg, tmp_path):
    broken = _perturb(exported[0], tmp_path / "broken", lambda a: a.size > 10_000, scale=0.05)
    torch_enc, onnx_enc = _encoders(gated_model, broken)
    with pytest.raises(StageFailed, match="ONNX parity check failed") as err:
        check_parity(torch_enc, onnx_enc, *texts, export_cfg.parity)
    assert "dense_min_cosine" in str(err.value) and "sparse_min_cosine" in str(err.value)


def test_broken_mlm_bias_names_only_the_sparse_checks(exported, gated_model, texts, export_cfg, tmp_path):
    vocab = len(gated_model[1])
    # the MLM decoder bias [vocab] feeds the sparse (lexicon) head only
    broken = _perturb(exported[0], tmp_path / "broken", lambda a: a.shape == (vocab,), scale=3.0)
    torch_enc, onnx_enc = _encoders(gated_model, broken)
    with pytest.raises(StageFailed) as err:
        check_parity(torch_enc, onnx_enc, *texts, export_cfg.parity)
    message = str(err.value)
    assert "sparse_min_cosine" in message
    assert "dense_min_cosine" not in message


def test_missing_graph_is_a_clear_error(exported, gated_model, tmp_path):
    shutil.copy(exported[0] / QUERY_FILE, tmp_path / QUERY_FILE)
    with pytest.raises(FileNotFoundError, match="doc.onnx"):
        OnnxEncoder(tmp_path, gated_model[1], BATCH, QLEN, DLEN)


def test_legacy_exporter_also_passes_parity(gated_model, texts, export_cfg, tmp_path):
    import dataclasses

    model, tokenizer = gated_model
    legacy = dataclasses.replace(export_cfg, dynamo=False)
    outputs = export_encoders(model, tokenizer, tmp_path, legacy, QLEN, DLEN)
    assert outputs[QUERY_FILE] == ["dense", "sparse", "gate"]
    queries, docs = texts
    figures = check_parity(*_encoders(gated_model, tmp_path), queries[:4], docs[:8], legacy.parity)
    assert figures["doc_sparse_min_cosine"] >= 0.9999
