"""The two-backbone pair (recipe `hybrid`): shapes, sparsity, the modules it is made of, checkpoints."""

from __future__ import annotations

import pytest
import torch

from uniret.config.models import ModelConfig
from uniret.models.backbones import BackboneError
from uniret.models.factory import build_model, load_model, save_model

VOCAB = 30522
PAIR = dict(arch="pair", backbone="minilm", lexicon_backbone="splade-tiny", pooling="mean", normalize=True,
            query_scale=20.0)


@pytest.fixture(scope="module")
def pair():
    torch.manual_seed(0)
    return build_model(ModelConfig(**PAIR)).eval()


def test_pair_heads_shapes_scale_and_sparsity(pair, tokenize, queries, docs):
    q = pair(*tokenize(pair.tokenizer, queries), is_query=True)
    d = pair(*tokenize(pair.tokenizer, docs), is_query=False)
    assert q.dense.shape == (2, 384) and d.dense.shape == (4, 384)
    # documents are unit vectors, queries 20x (the MiniLM training scale): dense score = 20 * cosine
    assert torch.allclose(d.dense.norm(dim=1), torch.ones(4), atol=1e-5)
    assert torch.allclose(q.dense.norm(dim=1), torch.full((2,), 20.0), atol=1e-4)
    assert q.sparse.shape == (2, VOCAB) and (q.sparse >= 0).all()
    active = (d.sparse > 0).sum(1)
    assert (active > 0).all() and (active < 0.02 * VOCAB).all()  # SPLADE-tiny stays sparse
    assert q.gate is None


def test_pair_heads_are_the_pretrained_retrievers(pair, tokenize, docs):
    """Each head equals its backbone's own model: the pair adds no untrained parameters."""
    dense = build_model(ModelConfig(arch="dense", backbone="minilm", pooling="mean", normalize=True)).eval()
    splade = build_model(ModelConfig(arch="splade", backbone="splade-tiny")).eval()
    ids, mask = tokenize(pair.tokenizer, docs)
    out = pair(ids, mask)
    assert torch.allclose(out.dense, dense(ids, mask).dense, atol=1e-6)
    assert torch.allclose(out.sparse, splade(ids, mask).sparse, atol=1e-5)
    n = sum(p.numel() for p in pair.parameters())
    assert n == sum(p.numel() for p in dense.parameters()) + sum(p.numel() for p in splade.parameters())
    assert n < 30_000_000  # CPU-servable query side (issue 10: at most about 30M)


def test_pair_checkpoint_round_trip(pair, tokenize, queries, tmp_path):
    path = save_model(pair, tmp_path / "ck")
    assert (path / "backbone" / "config.json").is_file() and (path / "lexicon_backbone" / "config.json").is_file()
    loaded, tokenizer = load_model(path)
    ids, mask = tokenize(tokenizer, queries)
    a, b = pair(ids, mask, is_query=True), loaded(ids, mask, is_query=True)
    assert torch.equal(a.dense, b.dense) and torch.equal(a.sparse, b.sparse)


def test_pair_refuses_backbones_with_different_vocabularies(tmp_path):
    import shutil

    from uniret.models.backbones import load_tokenizer, resolve_backbone

    # SPLADE-tiny's weights with a tokenizer that knows one more token than MiniLM's
    model_dir = tmp_path / "lex"
    shutil.copytree(resolve_backbone("splade-tiny"), model_dir)
    tok = load_tokenizer("splade-tiny")
    tok.add_tokens(["uniretxyz"])
    tok.save_pretrained(model_dir)
    with pytest.raises(BackboneError, match="tokenize differently"):
        build_model(ModelConfig(**{**PAIR, "lexicon_backbone": str(model_dir)}))
