"""Checkpoint folders: save/load round trip gives identical outputs; bad folders are clear errors."""

from __future__ import annotations

import json
import stat

import pytest
import torch

from uniret.config.models import ModelConfig
from uniret.models.factory import build_model, load_model, read_model_config, save_model

CASES = [
    ModelConfig(arch="unifier", backbone="splade-tiny", shared_layers=1, dense_layers=1, gating=True),
    ModelConfig(arch="aggretriever", backbone="splade-tiny", cls_dim=8, agg_dim=32, slice_seed=5),
    ModelConfig(arch="splade", backbone="splade-tiny"),
    ModelConfig(arch="dense", backbone="minilm", pooling="mean", query_marker="[unused0]", doc_marker="[unused1]"),
]


def _perturb(model):
    # move away from the pretrained weights, so a reload that silently re-read the backbone would fail
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))


@pytest.mark.parametrize("cfg", CASES, ids=lambda c: c.arch)
def test_round_trip_identical_outputs(cfg, tmp_path, tokenize, queries):
    torch.manual_seed(1)
    model = build_model(cfg).eval()
    _perturb(model)
    ids, mask = tokenize(model.tokenizer, queries)
    before = model(ids, mask, is_query=True)
    save_model(model, tmp_path / "ckpt")
    assert stat.S_IMODE((tmp_path / "ckpt").stat().st_mode) & stat.S_IROTH  # not mkdtemp's 0700
    loaded, tokenizer = load_model(tmp_path / "ckpt")
    assert not loaded.training and loaded.model_config == cfg
    assert tokenizer(queries[0])["input_ids"] == model.tokenizer(queries[0])["input_ids"]
    after = loaded(ids, mask, is_query=True)
    for channel in ("dense", "sparse", "gate"):
        a, b = getattr(before, channel), getattr(after, channel)
        assert (a is None) == (b is None), channel
        if a is not None:
            assert torch.equal(a, b), channel


def test_reranker_round_trip_and_overwrite(tmp_path):
    model = build_model(ModelConfig(arch="reranker", backbone="minilm", max_length=48))
    _perturb(model)
    pairs = [("q one", "doc one"), ("another query", "another document")]
    before = model.score(pairs)
    save_model(model, tmp_path / "rr")
    save_model(model, tmp_path / "rr")  # overwriting an existing checkpoint works
    loaded, _ = load_model(tmp_path / "rr")
    assert loaded.score(pairs) == pytest.approx(before, abs=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rr"]  # no temp folders left behind


def test_bad_checkpoints_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a uniret model checkpoint"):
        load_model(tmp_path)
    (tmp_path / "uniret_model.json").write_text(json.dumps({"format": 1, "config": {"arch": "unifier", "nope": 1}}))
    with pytest.raises(ValueError, match="nope"):
        read_model_config(tmp_path)
