"""The form models take while exported: eager attention and a pre-transposed vocabulary GEMM.

Both change how the traced graph computes, never what: the same outputs, the checkpoint untouched,
everything restored afterwards (even when the export fails).
"""

from __future__ import annotations

import pytest
import torch

from uniret.models import pooling
from uniret.models.backbones import eager_attention
from uniret.models.pooling import EXPORT_WEIGHT_T, quantizable_vocab_projection


def _implementations(model) -> set[str]:
    return {m.config._attn_implementation for m in model.modules()
            if hasattr(getattr(m, "config", None), "_attn_implementation")}


@pytest.mark.parametrize("arch", ("unifier", "splade"))
def test_eager_attention_reaches_every_layer_and_is_restored(build, tokenize, docs, arch):
    model = build(arch, "splade-tiny", shared_layers=1, dense_layers=1).eval()
    before = _implementations(model)
    assert before and "eager" not in before  # the default (sdpa) is what is switched
    ids, mask = tokenize(model.tokenizer, docs, max_length=48)
    with torch.inference_mode():
        ref = model(ids, mask)
        with eager_attention(model):
            # UnifieR's stacks are layers taken out of a backbone: their configs switch too
            assert _implementations(model) == {"eager"}
            eager = model(ids, mask)
        assert _implementations(model) == before
    assert torch.allclose(eager.sparse, ref.sparse, atol=1e-4)
    if ref.dense is not None:
        assert torch.allclose(eager.dense, ref.dense, atol=1e-4)
    with pytest.raises(RuntimeError), eager_attention(model):
        raise RuntimeError("export failed")
    assert _implementations(model) == before


def test_quantizable_vocab_projection_gives_the_same_pooled_weights(build, tokenize, docs, monkeypatch):
    model = build("splade", "splade-tiny").eval()
    keys = set(model.state_dict())
    ids, mask = tokenize(model.tokenizer, docs + ["protein"], max_length=48)
    with torch.inference_mode():
        ref = model(ids, mask).sparse
        with quantizable_vocab_projection(model):
            decoders = [m for m in model.modules() if getattr(m, EXPORT_WEIGHT_T, None) is not None]
            assert len(decoders) == 1
            weight_t = getattr(decoders[0], EXPORT_WEIGHT_T)
            assert weight_t.shape == decoders[0].weight.t().shape and weight_t.is_contiguous()
            assert set(model.state_dict()) == keys  # non-persistent: never saved with a checkpoint
            monkeypatch.setattr(pooling, "exporting", lambda: True)  # the traced path, run eagerly
            traced_form = model(ids, mask).sparse
            monkeypatch.undo()
    assert not any(getattr(m, EXPORT_WEIGHT_T, None) is not None for m in model.modules())
    assert (ref > 0).sum() > 0
    assert torch.allclose(traced_form, ref, atol=1e-5)
