"""LED teacher helpers and CLEAR's test-time interpolation."""

from __future__ import annotations

import pytest
import torch

from uniret.models.clear import dualrm_fuse, dualrm_score
from uniret.models.led import LexicalTeacher, build_lexical_teacher, teacher_group_scores


def test_lexical_teacher_is_frozen_and_scores_groups(build, tokenize, queries, docs):
    unifier = build("unifier", "splade-tiny", shared_layers=1, dense_layers=1)
    teacher = LexicalTeacher(unifier)
    teacher.train()  # a teacher refuses training mode
    assert not teacher.training and all(not p.requires_grad for p in teacher.parameters())
    q_ids, q_mask = tokenize(unifier.tokenizer, queries)
    d_ids, d_mask = tokenize(unifier.tokenizer, docs)
    scores = teacher_group_scores(teacher, {"input_ids": q_ids, "attention_mask": q_mask},
                                  {"input_ids": d_ids, "attention_mask": d_mask}, group_size=2)
    q = unifier(q_ids, q_mask, is_query=True).sparse
    d = unifier(d_ids, d_mask).sparse
    expected = torch.stack([q[0] @ d[0:2].T, q[1] @ d[2:4].T])
    assert scores.shape == (2, 2) and torch.allclose(scores, expected, atol=1e-4)
    with pytest.raises(ValueError, match="no sparse channel"):
        LexicalTeacher(build("dense", "minilm"))


def test_dualrm_interpolation_by_hand():
    assert dualrm_score(10.0, 2.0, 0.5) == 7.0
    # bm25 {a: 10, b: 4}; emb {b: 3, c: 5}; floors: bm25 4, emb 3; lambda 0.5
    #   a: 0.5*10 + 3 = 8 ; b: 0.5*4 + 3 = 5 ; c: 0.5*4 + 5 = 7
    fused = dualrm_fuse({"a": 10.0, "b": 4.0}, {"b": 3.0, "c": 5.0}, 0.5)
    assert fused == [("a", 8.0), ("c", 7.0), ("b", 5.0)]
    assert dualrm_fuse({"a": 1.0}, {}, 0.5, k=1) == [("a", 0.5)]


def test_build_lexical_teacher_from_config_and_from_a_stage(tmp_path, build):
    from uniret.config.models import ModelConfig, RecipeConfig
    from uniret.models.factory import save_model

    recipe = RecipeConfig(model=ModelConfig(arch="dense", backbone="minilm"),
                          teacher=ModelConfig(arch="splade", backbone="splade-tiny"))
    teacher = build_lexical_teacher(recipe)
    assert teacher.channels == ("sparse",) and not any(p.requires_grad for p in teacher.parameters())
    save_model(build("unifier", "splade-tiny", shared_layers=1, dense_layers=1), tmp_path / "warmup")
    staged = RecipeConfig(model=recipe.model, teacher_from_stage="warmup")
    from_stage = build_lexical_teacher(staged, {"warmup": tmp_path / "warmup"})
    assert type(from_stage.encoder).__name__ == "UnifierEncoder"
    with pytest.raises(FileNotFoundError, match="warmup"):
        build_lexical_teacher(staged, {})
