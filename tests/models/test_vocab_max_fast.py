"""The blockwise vocabulary max equals the reference per-row loop: values, gradients, padding edge cases."""

from __future__ import annotations

from itertools import islice

import numpy as np
import pytest
import torch

from uniret.data.beir import BeirDataset
from uniret.models import pooling
from uniret.models.encode import encode_texts
from uniret.models.pooling import reference_vocab_max, vocab_max

ARCHS = ("splade", "unifier", "aggretriever")


@pytest.fixture(scope="module")
def real_docs(shared_data) -> list[str]:
    """Six real SciFact documents plus padding edge cases: a one-token doc and an empty doc."""
    corpus = BeirDataset(shared_data / "scifact", "scifact").iter_corpus()
    return [d.contents for d in islice(corpus, 6)] + ["protein", ""]


def _build(build, arch):
    return build(arch, "splade-tiny", shared_layers=1, dense_layers=1)


def _assert_same(fast, ref, arch):
    for channel in ("dense", "sparse"):
        a, b = getattr(fast, channel), getattr(ref, channel)
        assert (a is None) == (b is None), (arch, channel)
        if a is not None:
            assert a.shape == b.shape, (arch, channel)
            assert torch.allclose(a, b, rtol=1e-5, atol=1e-5), (arch, channel, (a - b).abs().max().item())


@pytest.mark.parametrize("arch", ARCHS)
def test_fast_vocab_max_equals_reference_on_real_text(build, tokenize, real_docs, arch, monkeypatch):
    model = _build(build, arch)
    # the long doc and the one-token doc in one batch: most of the short row is padding
    ids, mask = tokenize(model.tokenizer, [real_docs[0], real_docs[-2]], max_length=128)
    assert mask[0].sum() > 100 and mask[1].sum() == 3
    with torch.inference_mode():
        with reference_vocab_max():
            ref_pair = model(ids, mask)
            ref_all = model(*tokenize(model.tokenizer, real_docs, max_length=64))
        _assert_same(model(ids, mask), ref_pair, arch)
        # tiny blocks: many vocabulary slices / document chunks, the last one ragged
        monkeypatch.setattr(pooling, "BLOCK_ELEMENTS", 1000)
        _assert_same(model(ids, mask), ref_pair, arch)
        _assert_same(model(*tokenize(model.tokenizer, real_docs, max_length=64)), ref_all, arch)
    if arch == "splade":
        assert (ref_pair.sparse > 0).sum() > 0  # a non-trivial comparison


def test_rows_without_kept_tokens_are_zero_in_both_paths():
    torch.manual_seed(0)
    hidden = torch.randn(3, 4, 8)
    keep = torch.tensor([[0, 0, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]])
    project = torch.nn.Linear(8, 5)
    fast = vocab_max(project, hidden, keep)
    with reference_vocab_max():
        ref = vocab_max(project, hidden, keep)
    assert torch.allclose(fast, ref, atol=1e-6)
    assert fast[0].abs().sum() == 0
    expected = project(hidden[1, [0, 2]]).max(dim=0).values
    assert torch.allclose(fast[1], expected, atol=1e-6)


@pytest.mark.parametrize("arch", ("splade", "unifier"))
def test_training_pool_gives_the_inference_values(build, tokenize, real_docs, arch, monkeypatch):
    """With autograd on, a linear MLM head pools through its active entries only: same values as
    the no-grad path, a row without kept tokens included, whatever the vocabulary slicing."""
    model = _build(build, arch)
    ids, mask = tokenize(model.tokenizer, real_docs, max_length=64)
    mask[-1] = 0  # no kept token at all: an empty representation in both paths
    calls = []
    original = pooling._active_entries_pool
    monkeypatch.setattr(pooling, "_active_entries_pool", lambda *a: calls.append(1) or original(*a))
    with torch.inference_mode():
        expected = model(ids, mask).sparse
    assert not calls  # inference keeps the one-GEMM max
    for block in (pooling.BLOCK_ELEMENTS, 1000):
        monkeypatch.setattr(pooling, "BLOCK_ELEMENTS", block)
        got = model(ids, mask).sparse
        assert got.requires_grad and torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()
    assert len(calls) == 2
    assert (expected > 0).sum(dim=1)[:-1].min() > 0 and expected[-1].abs().sum() == 0


@pytest.mark.parametrize("arch", ("splade", "unifier", "aggretriever"))
def test_fast_vocab_max_gradients_equal_reference(build, tokenize, real_docs, arch):
    model = _build(build, arch)
    ids, mask = tokenize(model.tokenizer, [real_docs[1], real_docs[-2], real_docs[2]], max_length=48)

    def grads():
        model.zero_grad()
        out = model(ids, mask)
        (out.sparse if out.sparse is not None else out.dense).pow(2).sum().backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    fast = grads()
    with reference_vocab_max():
        ref = grads()
    assert fast.keys() == ref.keys() and len(fast) > 10
    for name in ref:  # float32 sums in another order: tolerance relative to the tensor's scale
        scale = ref[name].abs().max().item()
        assert torch.allclose(fast[name], ref[name], rtol=1e-4, atol=1e-5 * max(scale, 1.0)), name


def test_encode_texts_fast_equals_reference(build, real_docs):
    model = _build(build, "unifier")
    texts = real_docs + [real_docs[0][:40]]
    fast = encode_texts(model, model.tokenizer, texts, False, batch_size=3, max_length=96, device="cpu")
    with reference_vocab_max():
        ref = encode_texts(model, model.tokenizer, texts, False, batch_size=3, max_length=96, device="cpu")
    assert np.allclose(fast[0], ref[0], atol=1e-5)
    assert fast[1].shape == ref[1].shape and abs(fast[1] - ref[1]).max() < 1e-4
    assert fast[1].getnnz(axis=1)[-3] > 0  # the one-token doc still has its terms
