"""CLEAR's embedding: cosine x query_scale, applied on the query side only."""

from __future__ import annotations

import pytest
import torch

from uniret.config.loader import ConfigError, build
from uniret.config.models import ModelConfig


def test_query_scale_multiplies_unit_query_vectors_only():
    from uniret.models.factory import build_model

    model = build_model(ModelConfig(arch="dense", backbone="minilm", pooling="mean", normalize=True,
                                    query_scale=20.0, query_max_length=16, doc_max_length=16)).eval()
    enc = model.tokenizer(["vitamin d and bone density"], return_tensors="pt")
    with torch.no_grad():
        q = model(enc["input_ids"], enc["attention_mask"], is_query=True).dense
        d = model(enc["input_ids"], enc["attention_mask"], is_query=False).dense
    assert torch.linalg.vector_norm(d).item() == pytest.approx(1.0, abs=1e-5)
    assert torch.linalg.vector_norm(q).item() == pytest.approx(20.0, abs=1e-4)
    assert torch.allclose(q / 20.0, d, atol=1e-6)  # same text, no markers: score = 20 * cosine


def test_query_scale_must_be_positive():
    with pytest.raises(ConfigError, match="query_scale must be > 0"):
        build(ModelConfig, {"arch": "dense", "query_scale": 0.0}, "model")
