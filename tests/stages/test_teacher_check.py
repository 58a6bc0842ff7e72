"""The distill stage drops reranker-taught terms when the reranker ranks no better than chance."""

from __future__ import annotations

import pytest

from uniret.runtime import MANIFEST
from uniret.stages.teachers import usable_teacher_terms
from uniret.utils.files import atomic_write_json


@pytest.mark.parametrize(("top1", "kept"), [(0.3, False), (0.8, True)])
def test_weak_reranker_terms_are_dropped_with_the_reason(tiny_ctx, top1, kept):
    atomic_write_json(tiny_ctx.stage_dir("reranker") / MANIFEST, {"stage": "reranker", "metrics": {"top1_accuracy": top1}})
    terms = tiny_ctx.params.section("losses").terms("hybrid", "distill")
    taught = {n for n, t in terms.items() if t.loss == "distill_kl"}
    assert taught == {"distill_dense", "distill_lex"}
    usable, note = usable_teacher_terms(tiny_ctx, terms, min_top1=0.5)
    if kept:
        assert usable == terms and note is None
    else:
        assert set(usable) == set(terms) - taught
        assert "0.3" in note and "distill_dense" in note and "min_teacher_top1 0.5" in note
    assert usable_teacher_terms(tiny_ctx, terms, min_top1=None) == (terms, None)
