"""LED (Zhang et al., 3.2): a dense student enlightened by a frozen lexical teacher.

The student is a `DenseEncoder`; the teacher is the lexicon model of an earlier stage (a
`SpladeEncoder`, or the lexicon channel of a UnifieR checkpoint). The teacher contributes
(1) lexicon-augmented negatives: its top-ranked non-positives join the dense negatives
(N_mix, Eq. 8; mined by the mine stage with the teacher's sparse channel), and
(2) the pair orders of the rank-consistent regularizer (Eq. 9-10), from `teacher_group_scores`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import torch

from uniret.models.base import Encoded, RetrievalEncoder
from uniret.models.splade import freeze


class LexicalTeacher(RetrievalEncoder):
    """The sparse channel of any encoder, frozen: LED's lexical teacher (theta_lex2)."""

    channels = ("sparse",)

    def __init__(self, encoder: RetrievalEncoder):
        super().__init__()
        if "sparse" not in encoder.channels:
            raise ValueError(f"{type(encoder).__name__} has no sparse channel to teach with")
        self.encoder = freeze(encoder)

    def train(self, mode: bool = True):  # a teacher stays in eval mode (no dropout)
        return super().train(False)

    @torch.no_grad()
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, is_query: bool = False) -> Encoded:
        return Encoded(sparse=self.encoder(input_ids, attention_mask, is_query=is_query).sparse)


@torch.no_grad()
def teacher_group_scores(
    teacher: RetrievalEncoder, queries: dict, docs: dict, group_size: int, channel: str = "sparse"
) -> torch.Tensor:
    """[Q, G] teacher scores of each query against its own group of G documents (positive first).

    `queries` / `docs` hold input_ids and attention_mask; docs are grouped by query, G per query.
    """
    q = getattr(teacher(queries["input_ids"], queries["attention_mask"], is_query=True), channel)
    d = getattr(teacher(docs["input_ids"], docs["attention_mask"], is_query=False), channel)
    d = d.view(q.shape[0], group_size, -1)
    return torch.einsum("qh,qgh->qg", q, d)


def build_lexical_teacher(recipe, stage_models: Mapping[str, str | os.PathLike] | None = None) -> LexicalTeacher:
    """LED's frozen lexical teacher for a RecipeConfig.

    With `recipe.teacher_from_stage` set, the teacher is the sparse channel of that stage's saved
    model (`stage_models[stage]` is its checkpoint folder); otherwise `recipe.teacher` is built
    from its backbone (e.g. the SPLADE-tiny lexical model).
    """
    from uniret.models.factory import build_model, load_model

    stage = recipe.teacher_from_stage
    if stage is not None:
        if not stage_models or stage not in stage_models:
            raise FileNotFoundError(f"LED teacher_from_stage {stage!r}: no saved model of that stage was given")
        model, _ = load_model(stage_models[stage])
        return LexicalTeacher(model)
    if recipe.teacher is None:
        raise ValueError("the led recipe needs `teacher` or `teacher_from_stage`")
    return LexicalTeacher(build_model(recipe.teacher))
