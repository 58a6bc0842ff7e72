"""Each architecture's outputs: shapes, non-negativity, sparsity, gate range, padding invariance."""

from __future__ import annotations

import pytest
import torch

from uniret.models.aggretriever import lexical_token_mask, slice_index, slice_max_signed
from uniret.models.pooling import mean_pool, saturated_max_pool
from uniret.models.unifier import combine_uni

VOCAB = 30522


def test_unifier_heads_shapes_sparsity_and_gate(build, tokenize, queries, docs):
    model = build("unifier", "splade-tiny", shared_layers=1, dense_layers=1, lexicon_layers=1, gating=True)
    ids, mask = tokenize(model.tokenizer, queries)
    q = model(ids, mask, is_query=True)
    assert q.dense.shape == (2, 128) and q.sparse.shape == (2, VOCAB)
    assert (q.sparse >= 0).all()
    active = (q.sparse > 0).sum(1)
    assert (active > 0).all() and (active < 0.05 * VOCAB).all()  # sparse: a few dozen terms, not 30k
    assert q.gate.shape == (2,) and ((q.gate >= 0) & (q.gate <= 1)).all()
    assert torch.allclose(q.gate, torch.full((2,), 0.5))  # zero-initialised gate = plain addition
    d = model(*tokenize(model.tokenizer, docs), is_query=False)
    assert d.gate is None and d.sparse.shape == (4, VOCAB)


def test_unifier_layer_split_uses_the_backbone_layers(build):
    model = build("unifier", "splade-tiny", shared_layers=1, dense_layers=1, lexicon_layers=1)
    assert len(model.ctx_layers) == 1 and len(model.den_layers) == 1 and len(model.lex_layers) == 1
    # the lexicon layer starts as a copy of the top layer, but is a separate parameter set
    top, lex = model.den_layers[0], model.lex_layers[0]
    for (name, a), (_, b) in zip(top.named_parameters(), lex.named_parameters(), strict=True):
        assert torch.equal(a, b) and a.data_ptr() != b.data_ptr(), name
    with pytest.raises(ValueError, match="exceed"):
        build("unifier", "splade-tiny", shared_layers=2, dense_layers=1)


def test_unifier_lexicon_channel_starts_close_to_splade(build, tokenize, docs):
    """At init the lexicon path differs from SPLADE-tiny only by u replacing h_[CLS]."""
    unifier = build("unifier", "splade-tiny", shared_layers=1, dense_layers=1, lexicon_layers=1)
    splade = build("splade", "splade-tiny")
    ids, mask = tokenize(unifier.tokenizer, docs)
    a, b = unifier(ids, mask).sparse, splade(ids, mask).sparse
    cos = torch.nn.functional.cosine_similarity(a, b, dim=1)
    assert (cos > 0.8).all(), cos


def test_padding_does_not_change_outputs(build, tokenize, docs):
    for arch in ("unifier", "aggretriever", "splade"):
        model = build(arch, "splade-tiny", shared_layers=1, dense_layers=1)
        ids, mask = tokenize(model.tokenizer, docs)
        batch = model(ids, mask)
        alone_ids, alone_mask = tokenize(model.tokenizer, docs[:1])
        alone = model(alone_ids, alone_mask)
        for channel in ("dense", "sparse"):
            full, single = getattr(batch, channel), getattr(alone, channel)
            if full is not None:
                assert torch.allclose(full[:1], single, atol=1e-4), (arch, channel)


def test_splade_head_is_sparse_only(build, tokenize, queries):
    model = build("splade", "splade-tiny")
    out = model(*tokenize(model.tokenizer, queries), is_query=True)
    assert out.dense is None and out.gate is None
    assert (out.sparse >= 0).all() and ((out.sparse > 0).sum(1) < 0.05 * VOCAB).all()


def test_saturated_max_pool_by_hand():
    # tokens x vocab logits, second token is padding (must be ignored even though it is larger)
    logits = torch.tensor([[[1.0, -2.0, 0.5], [9.0, 9.0, 9.0], [3.0, -1.0, -4.0]]])
    mask = torch.tensor([[1, 0, 1]])
    expected = torch.log1p(torch.tensor([[3.0, 0.0, 0.5]]))  # max over kept tokens, relu, log(1 + .)
    assert torch.allclose(saturated_max_pool(logits, mask), expected)
    hidden = torch.tensor([[[2.0], [100.0], [4.0]]])
    assert mean_pool(hidden, mask).item() == pytest.approx(3.0)


def test_aggretriever_shapes_and_parts(build, tokenize, queries):
    model = build("aggretriever", "splade-tiny", cls_dim=16, agg_dim=64)
    out = model(*tokenize(model.tokenizer, queries), is_query=True)
    assert out.dense.shape == (2, 16 + 64) and out.sparse is None
    assert model.dense_parts == {"cls": (0, 16), "agg": (16, 80)}
    agg = out.dense[:, 16:]
    assert (agg < 0).any() and (agg > 0).any()  # agg* spreads over both orthants


def test_slice_max_signed_by_hand():
    # v = [0.1, 0.5, 0.3, 0.2]; slices {0, 1} and {2, 3}; first half of each slice is S+.
    #   slice 0: max 0.5 at position 1 (S-) -> -0.5 ; slice 1: max 0.3 at position 0 (S+) -> +0.3
    v = torch.tensor([[0.1, 0.5, 0.3, 0.2]])
    index = torch.tensor([[0, 1], [2, 3]])
    assert slice_max_signed(v, index)[0].tolist() == pytest.approx([-0.5, 0.3])


def test_slice_index_partitions_the_vocabulary():
    index = slice_index(10, 4, seed=3)  # ceil(10 / 4) = 3 per slice, 2 padding ids (= 10)
    assert index.shape == (4, 3)
    flat = index.flatten().tolist()
    assert sorted(x for x in flat if x < 10) == list(range(10)) and flat.count(10) == 2
    assert torch.equal(index, slice_index(10, 4, seed=3))  # seeded: reproducible


def test_lexical_token_mask_drops_cls_and_sep():
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    assert lexical_token_mask(mask).int().tolist() == [[0, 1, 1, 0, 0], [0, 1, 1, 1, 0]]


def test_dense_pooling_and_markers(build, tokenize, queries):
    plain = build("dense", "minilm", pooling="mean")
    ids, mask = tokenize(plain.tokenizer, queries)
    out = plain(ids, mask, is_query=True)
    hidden = plain.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.allclose(out.dense, mean_pool(hidden, mask), atol=1e-6)
    cls = build("dense", "minilm", pooling="cls", normalize=True)(ids, mask).dense
    assert torch.allclose(cls.norm(dim=1), torch.ones(2), atol=1e-5)
    marked = build("dense", "minilm", pooling="mean", query_marker="[unused0]", doc_marker="[unused1]")
    as_query = marked(ids, mask, is_query=True).dense
    as_doc = marked(ids, mask, is_query=False).dense
    assert not torch.allclose(as_query, as_doc)  # [QRY] vs [DOC] in place of [CLS]
    assert not torch.allclose(as_query, out.dense)
    with pytest.raises(ValueError, match="not in the tokenizer"):
        build("dense", "minilm", query_marker="[NOPE]")


def test_reranker_scores_pairs_in_input_order(build):
    model = build("reranker", "minilm", max_length=48)
    pairs = [("protein misfolding", "Misfolded proteins aggregate."), ("vitamin d", "x"),
             ("a much longer query about bone density and vitamin d", "Bone density rose.")]
    batched = model.score(pairs, batch_size=2)
    one_by_one = [model.score([p], batch_size=1)[0] for p in pairs]
    assert batched.shape == (3,) and batched == pytest.approx(one_by_one, abs=1e-4)


def test_combine_uni_plain_and_gated():
    dense = torch.tensor([[1.0, 2.0]])
    lex = torch.tensor([[3.0, 0.0]])
    assert combine_uni(dense, lex).tolist() == [[4.0, 2.0]]
    assert combine_uni(dense, lex, torch.tensor([0.5])).tolist() == [[4.0, 2.0]]  # g = 0.5 == addition
    assert combine_uni(dense, lex, torch.tensor([1.0])).tolist() == [[6.0, 0.0]]  # lexicon only


def test_export_path_of_vocab_max_matches_the_eager_path(build, tokenize, docs, monkeypatch):
    """While tracing (ONNX export) the vectorised masked max runs instead of the per-row loop."""
    import uniret.models.pooling as pooling

    for arch in ("unifier", "aggretriever"):
        model = build(arch, "splade-tiny", shared_layers=1, dense_layers=1)
        ids, mask = tokenize(model.tokenizer, docs)
        eager = model(ids, mask)
        monkeypatch.setattr(pooling, "exporting", lambda: True)
        traced_path = model(ids, mask)
        monkeypatch.setattr(pooling, "exporting", lambda: False)
        for channel in ("dense", "sparse"):
            a, b = getattr(eager, channel), getattr(traced_path, channel)
            if a is not None:
                assert torch.allclose(a, b, atol=1e-5), (arch, channel)
    # the eager path gives rows without kept tokens zeros, like the export path
    hidden = torch.randn(2, 3, 4)
    keep = torch.tensor([[0, 0, 0], [1, 1, 0]])
    project = torch.nn.Linear(4, 5)
    eager_rows = pooling.vocab_max(project, hidden, keep)
    monkeypatch.setattr(pooling, "exporting", lambda: True)
    assert torch.allclose(eager_rows, pooling.vocab_max(project, hidden, keep), atol=1e-6)
    assert eager_rows[0].abs().sum() == 0


def test_unifier_encode_dense_is_forwards_dense_output(build, tokenize, queries):
    """The static tower's dense-only path (no lexicon module, no MLM head) gives forward's u exactly."""
    model = build("unifier", "splade-tiny", shared_layers=1, dense_layers=1, lexicon_layers=1).eval()
    ids, mask = tokenize(model.tokenizer, queries)
    with torch.inference_mode():
        full = model(ids, mask, is_query=True).dense
        alone = model.encode_dense(ids, mask)
    assert torch.equal(full, alone)
