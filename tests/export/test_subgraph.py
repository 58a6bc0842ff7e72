"""The query graph cut to its dense output (uniret.export.subgraph): what the static tower's
distillation runs instead of the torch model. Same vectors, the lexicon's nodes gone, and a clear
error for a graph without a dense output."""

from __future__ import annotations

from itertools import islice

import onnx
import pytest

from uniret.config import load_params
from uniret.data.beir import BeirDataset
from uniret.export.onnx import export_encoders
from uniret.export.parity import row_cosines
from uniret.export.subgraph import DenseGraph, dense_subgraph
from uniret.retrieval.onnx_encoder import QUERY_FILE
from uniret.training.static_tower import teacher_vectors

QLEN, DLEN = 32, 96


@pytest.fixture(scope="module")
def exported(repo_root, tmp_path_factory):
    """(pair model, tokenizer, folder of its legacy-exported graphs)."""
    from uniret.models.factory import build_model

    params = load_params(repo_root / "params.yaml", "tiny")
    model = build_model(params.section("model").recipes["hybrid"].model).eval()
    out = tmp_path_factory.mktemp("graphs")
    export_encoders(model, model.tokenizer, out, params.section("index").export, QLEN, DLEN)
    return model, model.tokenizer, out


def test_the_dense_subgraph_gives_the_teachers_vectors_without_the_lexicon(exported, shared_data, tmp_path):
    model, tokenizer, folder = exported
    ds = BeirDataset(shared_data / "scifact", "scifact")
    texts = [*islice(ds.split_queries("train").values(), 40), "", "a"]  # an empty text: only [CLS] [SEP]
    graph = dense_subgraph(folder / QUERY_FILE, tmp_path / "dense.onnx")
    full, cut = onnx.load(str(folder / QUERY_FILE)), onnx.load(str(graph))
    assert [o.name for o in full.graph.output] == ["dense", "sparse"]
    assert [o.name for o in cut.graph.output] == ["dense"]
    lexicon = [n.name for n in full.graph.node if n.name.startswith("/model/lexicon/")]  # SPLADE and its head
    assert len(lexicon) > 50 and not [n for n in cut.graph.node if n.name.startswith("/model/lexicon/")]
    reference = teacher_vectors(model, tokenizer, texts, QLEN, batch=16)
    got = teacher_vectors(model, tokenizer, texts, QLEN, batch=16, dense=DenseGraph(graph))
    assert got.shape == reference.shape == (len(texts), 384)
    assert row_cosines(reference, got).min() >= 0.9999
    assert abs(float((got ** 2).sum(1).min()) - 1.0) < 1e-5  # unit rows, as F.normalize gives


def test_a_graph_without_a_dense_output_is_named(exported, tmp_path):
    _, _, folder = exported
    sparse_only = tmp_path / "sparse.onnx"
    onnx.utils.extract_model(str(folder / QUERY_FILE), str(sparse_only), ["input_ids", "attention_mask"], ["sparse"])
    with pytest.raises(ValueError, match=r"sparse\.onnx: no 'dense' output"):
        dense_subgraph(sparse_only, tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()
