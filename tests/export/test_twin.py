"""The ONNX twin a stage encodes a corpus through (uniret.export.twin): the torch model's
encodings within the parity bounds, rebuildable by a shard worker from its folder, and None, so the
caller keeps torch, when the exported graphs do not match the model."""

from __future__ import annotations

import copy
import logging
from itertools import islice

import numpy as np
import pytest
import torch

import uniret.export.twin as twin_module
from uniret.config import load_params
from uniret.data.beir import BeirDataset
from uniret.export.parity import row_cosines
from uniret.export.twin import TOKENIZER_DIR, onnx_twin
from uniret.retrieval.encoding import TorchTextEncoder
from uniret.retrieval.onnx_encoder import OnnxEncoder
from uniret.retrieval.sharded import EncoderSpec

QLEN, DLEN, BATCH = 32, 96, 16


@pytest.fixture(scope="module")
def params(repo_root):
    return load_params(repo_root / "params.yaml", "tiny")


@pytest.fixture(scope="module")
def pair(params):
    """The default recipe's pair model (MiniLM dense + SPLADE-tiny lexicon), untrained."""
    from uniret.models.factory import build_model

    model = build_model(params.section("model").recipes["hybrid"].model).eval()
    return model, model.tokenizer


@pytest.fixture(scope="module")
def texts(shared_data):
    ds = BeirDataset(shared_data / "scifact", "scifact")
    return list(islice(ds.split_queries("train").values(), 12)), [d.contents for d in islice(ds.iter_corpus(), 60)]


def test_the_twin_encodes_as_the_torch_model_and_a_shard_worker_can_rebuild_it(pair, params, texts, tmp_path):
    model, tokenizer = pair
    encoder = TorchTextEncoder(model, tokenizer, BATCH, QLEN, DLEN)
    queries, docs = texts
    twin = onnx_twin(encoder, tmp_path, queries[:6], docs[:20], params.section("index").export)
    assert isinstance(twin, OnnxEncoder)
    assert (twin.batch_size, twin.max_length) == (BATCH, {True: QLEN, False: DLEN})
    for is_query, batch in ((True, queries), (False, docs)):
        ref, got = encoder.encode(batch, is_query), twin.encode(batch, is_query)
        assert row_cosines(ref.dense, got.dense).min() >= 0.9999
        assert row_cosines(ref.sparse, got.sparse).min() >= 0.9999
    rebuilt = EncoderSpec("onnx", str(tmp_path), BATCH, QLEN, DLEN, tokenizer=str(tmp_path / TOKENIZER_DIR)).build()
    np.testing.assert_allclose(rebuilt.encode(docs, False).dense, twin.encode(docs, False).dense, rtol=0, atol=1e-6)


def test_graphs_that_do_not_match_the_model_leave_the_caller_on_torch(pair, params, texts, tmp_path, monkeypatch,
                                                                      caplog):
    model, tokenizer = pair
    exported = twin_module.export_encoders

    def export_another_model(model, *args, **kwargs):  # a graph of other weights than the encoder's
        other = copy.deepcopy(model)
        with torch.no_grad():
            for p in other.parameters():
                p.add_(torch.randn_like(p) * 0.05 * (p.std() + 1e-3))
        return exported(other, *args, **kwargs)

    monkeypatch.setattr(twin_module, "export_encoders", export_another_model)
    encoder = TorchTextEncoder(model, tokenizer, BATCH, QLEN, DLEN)
    with caplog.at_level(logging.WARNING, logger="uniret.export"):
        assert onnx_twin(encoder, tmp_path, texts[0][:6], texts[1][:20], params.section("index").export) is None
    assert any("ONNX twin of PairEncoder not used" in r.message and "dense_min_cosine" in r.message
               for r in caplog.records)
    assert not (tmp_path / TOKENIZER_DIR).exists()


def test_a_lazy_twin_is_made_by_the_first_corpus_pass_once_and_then_encodes_everything(pair, params, texts,
                                                                                        tmp_path):
    from uniret.export.twin import LazyTwin

    model, tokenizer = pair
    encoder = TorchTextEncoder(model, tokenizer, BATCH, QLEN, DLEN)
    lazy = LazyTwin(encoder, tmp_path / "twin", params.section("index").export)
    queries, docs = texts
    before = lazy.encode(queries, True)  # no corpus pass yet: torch, and nothing exported
    assert not lazy.made and lazy.current is encoder and not (tmp_path / "twin").exists()
    assert lazy.batch_size == BATCH  # other attributes are the current encoder's
    twin = lazy.corpus_encoder(queries, docs)
    assert lazy.made and isinstance(twin, OnnxEncoder) and lazy.current is twin
    graph = tmp_path / "twin" / "doc.onnx"
    stamp = graph.stat().st_mtime_ns
    assert lazy.corpus_encoder(queries, docs) is twin and graph.stat().st_mtime_ns == stamp  # made once
    assert row_cosines(before.dense, lazy.encode(queries, True).dense).min() >= 0.9999
