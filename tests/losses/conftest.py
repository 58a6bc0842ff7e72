"""Tiny hand-checkable batches for the loss tests."""

from __future__ import annotations

import pytest
import torch

from uniret.losses.base import LossInputs
from uniret.models.base import Encoded


def t(rows):
    return torch.tensor(rows, dtype=torch.float32, requires_grad=True)


def make_two_query_batch(**kw) -> LossInputs:
    # 2 queries, groups of 2 (positive first). 1-d dense vectors:
    #   q0 = 1, q1 = 2 ; docs d0 = 1 (q0+), d1 = 0 (q0-), d2 = 0 (q1+), d3 = 1 (q1-)
    #   group scores: q0 -> [1, 0], q1 -> [0, 2]
    #   in-batch scores: q0 -> [1, 0, 0, 1], q1 -> [2, 0, 0, 2]
    query = Encoded(dense=t([[1.0], [2.0]]), sparse=t([[1.0, 0.0, 2.0], [3.0, 0.0, 0.0]]))
    docs = Encoded(
        dense=t([[1.0], [0.0], [0.0], [1.0]]),
        sparse=t([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 3.0, 0.0], [2.0, 0.0, 0.0]]),
    )
    return LossInputs(query=query, docs=docs, group_size=2, **kw)


@pytest.fixture
def two_query_batch():
    """Factory of the 2-query, group-of-2 batch described in make_two_query_batch."""
    return make_two_query_batch
