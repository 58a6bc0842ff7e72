"""UnifieR 3.3: theta_den is not optimised by losses on the lexicon module (stop-gradient on u)."""

from __future__ import annotations

import torch

from uniret.losses.base import LossInputs
from uniret.losses.contrastive import ContrastiveLoss
from uniret.losses.flops import FlopsLoss


def _grad_norms(modules):
    return sum(float(p.grad.abs().sum()) for m in modules for p in m.parameters() if p.grad is not None)


def _batch(model, tokenize, queries, docs):
    q = model(*tokenize(model.tokenizer, queries), is_query=True)
    d = model(*tokenize(model.tokenizer, docs), is_query=False)
    return LossInputs(query=q, docs=d, group_size=2)


def test_lexicon_losses_leave_theta_den_untouched(build, tokenize, queries, docs):
    model = build("unifier", "splade-tiny", shared_layers=1, dense_layers=1, lexicon_layers=1).train()
    batch = _batch(model, tokenize, queries, docs)
    loss = ContrastiveLoss("sparse")(batch) + 0.01 * FlopsLoss()(batch)
    loss.backward()
    assert _grad_norms(model.den_layers) == 0.0  # theta_den: no gradient from lexicon losses
    assert _grad_norms(model.lex_layers) > 0.0  # theta_mlm learns
    assert _grad_norms(model.ctx_layers) > 0.0  # theta_ctx learns through h_1..h_n


def test_dense_loss_reaches_shared_and_dense_layers_only(build, tokenize, queries, docs):
    model = build("unifier", "splade-tiny", shared_layers=1, dense_layers=1, lexicon_layers=1).train()
    ContrastiveLoss("dense")(_batch(model, tokenize, queries, docs)).backward()
    assert _grad_norms(model.den_layers) > 0.0 and _grad_norms(model.ctx_layers) > 0.0
    assert _grad_norms(model.lex_layers) == 0.0


def test_gate_learns_from_the_uni_score(build, tokenize, queries, docs):
    model = build("unifier", "splade-tiny", shared_layers=1, dense_layers=1, gating=True).train()
    ContrastiveLoss("uni")(_batch(model, tokenize, queries, docs)).backward()
    assert float(model.gate.weight.grad.abs().sum()) > 0.0
    model.zero_grad()
    ContrastiveLoss("sparse")(_batch(model, tokenize, queries, docs)).backward()
    assert model.gate.weight.grad is None or float(model.gate.weight.grad.abs().sum()) == 0.0
    assert torch.isfinite(model.gate.bias).all()
