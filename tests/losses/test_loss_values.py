"""Every loss against a value worked out by hand on a tiny tensor (the arithmetic is in the comments)."""

from __future__ import annotations

import math

import pytest
import torch

from uniret.losses.agreement import AgreementLoss
from uniret.losses.base import LossInputs
from uniret.losses.clear_margin import ClearMarginLoss
from uniret.losses.contrastive import ContrastiveLoss
from uniret.losses.distill_kl import DistillKLLoss
from uniret.losses.flops import FlopsLoss
from uniret.losses.margin_mse import MarginMSELoss
from uniret.losses.rank_consistency import RankConsistencyLoss
from uniret.models.base import Encoded


def t(rows):
    return torch.tensor(rows, dtype=torch.float32, requires_grad=True)


def test_contrastive_group_only(two_query_batch):
    # q0: -log(e^1 / (e^1 + e^0)) = log(1 + e^-1); q1: -log(e^0 / (e^0 + e^2)) = log(1 + e^2)
    expected = (math.log(1 + math.exp(-1)) + math.log(1 + math.exp(2))) / 2
    got = ContrastiveLoss("dense", temperature=1.0, in_batch=False)(two_query_batch())
    assert got.item() == pytest.approx(expected, rel=1e-6)


def test_contrastive_in_batch_and_temperature(two_query_batch):
    # in-batch, q0: -log(e / (e + 1 + 1 + e)) = log(2 + 2/e); q1 (positive = d2, score 0):
    #   -log(1 / (e^2 + 1 + 1 + e^2)) = log(2 e^2 + 2)
    expected = (math.log(2 + 2 / math.e) + math.log(2 * math.exp(2) + 2)) / 2
    assert ContrastiveLoss("dense", 1.0, True)(two_query_batch()).item() == pytest.approx(expected, rel=1e-6)
    # temperature 0.5 doubles the group scores: q0 [2, 0], q1 [0, 4]
    expected_t = (math.log(1 + math.exp(-2)) + math.log(1 + math.exp(4))) / 2
    assert ContrastiveLoss("dense", 0.5, False)(two_query_batch()).item() == pytest.approx(expected_t, rel=1e-6)


def test_contrastive_on_bm25_residual(two_query_batch):
    # normalised BM25 over each group: q0 [1, 0] (BM25 already ranks its positive first),
    # q1 [0, 1] (BM25 prefers the negative). lambda 2 adds [2, 0] / [0, 2] to the group logits:
    # q0 [3, 0], q1 [0, 4]
    bm25 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    batch = two_query_batch(bm25_minmax=bm25)
    expected = (math.log(1 + math.exp(-3)) + math.log(1 + math.exp(4))) / 2
    got = ContrastiveLoss("dense", 1.0, False, bm25_residual=2.0)(batch)
    assert got.item() == pytest.approx(expected, rel=1e-6)
    # in-batch: the prior sits on each query's own group, other queries' documents get 0:
    # q0 [1+2, 0, 0, 1], q1 [2, 0, 0, 2+2] with positives at columns 0 and 2
    expected_ib = (-math.log(math.exp(3) / (math.exp(3) + 1 + 1 + math.e))
                   - math.log(1 / (math.exp(2) + 1 + 1 + math.exp(4)))) / 2
    got_ib = ContrastiveLoss("dense", 1.0, True, bm25_residual=2.0)(two_query_batch(bm25_minmax=bm25))
    assert got_ib.item() == pytest.approx(expected_ib, rel=1e-6)
    # lambda 0 is the plain loss, with or without BM25 in the batch
    plain = ContrastiveLoss("dense", 1.0, True)(two_query_batch())
    assert ContrastiveLoss("dense", 1.0, True, 0.0)(two_query_batch(bm25_minmax=bm25)).item() == plain.item()
    # where BM25 already ranks the positive first (q0), the channel gets a smaller gradient
    q_plain = two_query_batch()
    ContrastiveLoss("dense", 1.0, False)(q_plain).backward()
    q_res = two_query_batch(bm25_minmax=bm25)
    ContrastiveLoss("dense", 1.0, False, 2.0)(q_res).backward()
    assert abs(q_res.query.dense.grad[0, 0]) < abs(q_plain.query.dense.grad[0, 0])
    with pytest.raises(ValueError, match="normalised BM25"):
        ContrastiveLoss("dense", 1.0, False, 2.0)(two_query_batch())


def test_flops_value(two_query_batch):
    # queries |w| column means: [(1+3)/2, 0, (2+0)/2] = [2, 0, 1] -> 4 + 0 + 1 = 5
    # docs column means: [2/4, (1+1+3)/4, 0] = [0.5, 1.25, 0] -> 0.25 + 1.5625 = 1.8125
    # query_weight 1, doc_weight 2: 5 + 2 * 1.8125 = 8.625
    assert FlopsLoss(1.0, 2.0)(two_query_batch()).item() == pytest.approx(8.625)


def test_agreement_is_kl_dense_to_lexicon(two_query_batch):
    # sparse group scores: q0: [q0.d0, q0.d1] = [0, 0]; q1: [q1.d2, q1.d3] = [0, 6]
    # dense group scores:  q0: [1, 0];                q1: [0, 2]
    def kl(p_scores, q_scores):
        p = [math.exp(s) / sum(math.exp(x) for x in p_scores) for s in p_scores]
        q = [math.exp(s) / sum(math.exp(x) for x in q_scores) for s in q_scores]
        return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True))

    expected = (kl([1, 0], [0, 0]) + kl([0, 2], [0, 6])) / 2
    reverse = (kl([0, 0], [1, 0]) + kl([0, 6], [0, 2])) / 2
    got = AgreementLoss("dense", "sparse")(two_query_batch()).item()
    assert got == pytest.approx(expected, rel=1e-6)
    assert abs(got - reverse) > 1e-3  # the direction matters on this example: KL(P_den || P_lex)


def test_agreement_stop_gradient_blocks_one_side(two_query_batch):
    batch = two_query_batch()
    AgreementLoss("dense", "sparse", stop_gradient="second")(batch).backward()
    assert batch.query.sparse.grad is None and batch.docs.sparse.grad is None
    assert batch.query.dense.grad.abs().sum() > 0


def test_rank_consistency_hinge_direction():
    # query 0: teacher [3, 2, 1] orders (0>1), (0>2), (1>2); student [1, 3, 2]
    #   hinges max(0, s_j - s_i): (0,1): 3-1 = 2; (0,2): 2-1 = 1; (1,2): 2-3 < 0 -> 0; mean 3/3 = 1
    # query 1: teacher [2, 2, 1] (tie: no pair between 0 and 1) -> pairs (0,2), (1,2); student [0, 1, 5]
    #   hinges: 5-0 = 5; 5-1 = 4; mean 4.5.   Batch mean: (1 + 4.5) / 2 = 2.75
    student = Encoded(dense=t([[1.0], [1.0]]))
    docs = Encoded(dense=t([[1.0], [3.0], [2.0], [0.0], [1.0], [5.0]]))
    teacher = torch.tensor([[3.0, 2.0, 1.0], [2.0, 2.0, 1.0]])
    batch = LossInputs(query=student, docs=docs, group_size=3, teachers={"lexical": teacher})
    assert RankConsistencyLoss("dense")(batch).item() == pytest.approx(2.75)
    # a student that orders every pair like the teacher pays nothing (printed Eq. 10's sign would not)
    agree = LossInputs(query=student, docs=Encoded(dense=t([[3.0], [2.0], [1.0], [9.0], [9.0], [1.0]])),
                       group_size=3, teachers={"lexical": teacher})
    assert RankConsistencyLoss("dense")(agree).item() == 0.0


def test_clear_residual_margin():
    # emb [2, 1, 2.5], bm25 [10, 5, 12], xi 1, lambda 0.1
    #   neg 1: m = 1 - 0.1 (10 - 5) = 0.5; hinge 0.5 - 2 + 1 = -0.5 -> 0
    #   neg 2: m = 1 - 0.1 (10 - 12) = 1.2; hinge 1.2 - 2 + 2.5 = 1.7 ; mean (0 + 1.7) / 2 = 0.85
    batch = LossInputs(
        query=Encoded(dense=t([[1.0]])), docs=Encoded(dense=t([[2.0], [1.0], [2.5]])), group_size=3,
        bm25_scores=torch.tensor([[10.0, 5.0, 12.0]]),
    )
    assert ClearMarginLoss("dense", xi=1.0, lambda_train=0.1)(batch).item() == pytest.approx(0.85)


def test_distill_kl_value_with_temperature():
    # teacher [2, 0], student [0, 0]; T = 2: p = softmax([1, 0]) = [e/(e+1), 1/(e+1)], q = [1/2, 1/2]
    #   KL = sum p log(2 p)
    p = [math.e / (math.e + 1), 1 / (math.e + 1)]
    expected = sum(pi * math.log(2 * pi) for pi in p)
    batch = LossInputs(
        query=Encoded(dense=t([[1.0]])), docs=Encoded(dense=t([[0.0], [0.0]])), group_size=2,
        teachers={"reranker": torch.tensor([[2.0, 0.0]])},
    )
    assert DistillKLLoss("dense", temperature=2.0)(batch).item() == pytest.approx(expected, rel=1e-6)
    # separate temperatures: teacher [2, 0] / 2 = [1, 0] (as above), student [0, 0] / 0.5 = [0, 0]: same value
    two = DistillKLLoss("dense", temperature=0.5, teacher_temperature=2.0)
    assert two(batch).item() == pytest.approx(expected, rel=1e-6)


def test_margin_mse_value():
    # student [3, 1, 2] -> margins [2, 1]; teacher [5, 4, 1] -> margins [1, 4]; ((2-1)^2 + (1-4)^2) / 2 = 5
    batch = LossInputs(
        query=Encoded(dense=t([[1.0]])), docs=Encoded(dense=t([[3.0], [1.0], [2.0]])), group_size=3,
        teachers={"reranker": torch.tensor([[5.0, 4.0, 1.0]])},
    )
    assert MarginMSELoss("dense")(batch).item() == pytest.approx(5.0)


def test_dense_parts_and_uni_channels():
    # Aggretriever-style parts: columns 0:1 "cls", 1:2 "agg"; uni = dense + sparse without a gate
    query = Encoded(dense=t([[1.0, 2.0]]), sparse=t([[1.0, 0.0]]))
    docs = Encoded(dense=t([[3.0, 1.0], [0.0, 1.0]]), sparse=t([[2.0, 0.0], [0.0, 5.0]]))
    batch = LossInputs(query=query, docs=docs, group_size=2, dense_parts={"cls": (0, 1), "agg": (1, 2)})
    assert batch.scores("cls").tolist() == [[3.0, 0.0]]
    assert batch.scores("agg").tolist() == [[2.0, 2.0]]
    assert batch.scores("uni").tolist() == [[5.0 + 2.0, 2.0 + 0.0]]
    # a query gate g = 0.25: 2 * (0.25 * lex + 0.75 * dense) -> [2 * (0.5 + 3.75), 2 * (0 + 1.5)]
    gated = LossInputs(query=Encoded(dense=query.dense, sparse=query.sparse, gate=torch.tensor([0.25])),
                       docs=docs, group_size=2)
    assert gated.scores("uni").tolist()[0] == pytest.approx([8.5, 3.0])


def test_bad_batch_shapes_and_missing_inputs_are_clear_errors(two_query_batch):
    with pytest.raises(ValueError, match="groups of 3"):
        LossInputs(query=Encoded(dense=t([[1.0]])), docs=Encoded(dense=t([[1.0], [2.0]])), group_size=3)
    batch = two_query_batch()
    with pytest.raises(ValueError, match="teacher 'lexical'"):
        RankConsistencyLoss()(batch)
    with pytest.raises(ValueError, match="bm25_scores"):
        ClearMarginLoss()(batch)
    with pytest.raises(ValueError, match="unknown score channel"):
        ContrastiveLoss("agg")(batch)


def test_sparse_idf_channel_scores_idf_bags_against_the_documents_sparse_output(two_query_batch):
    """The inference-free sparse channel: query side = the IDF of each distinct query token (no model),
    document side = the documents' sparse output; the loss trains the documents alone."""
    from uniret.config.models import LossTermConfig
    from uniret.losses.compose import needs
    from uniret.training.objectives import idf_bags

    idf = torch.tensor([0.0, 2.0, 0.5])  # token 0 plays [PAD] / a special token: IDF 0
    bags = idf_bags(torch.tensor([[1, 1, 0], [2, 0, 0]]), idf)  # token 1 twice: counted once
    assert bags.tolist() == [[0.0, 2.0, 0.0], [0.0, 0.0, 0.5]]
    batch = two_query_batch(query_idf=bags)
    # group scores: q0 (bag 2 x token 1) -> d0 = 2, d1 = 2; q1 (0.5 x token 2) -> d2 = 0, d3 = 0
    assert batch.scores("sparse_idf").tolist() == [[2.0, 2.0], [0.0, 0.0]]
    got = ContrastiveLoss("sparse_idf", 1.0, in_batch=False)(batch)
    assert got.item() == pytest.approx(math.log(2), rel=1e-6)  # both groups tied: log 2 each
    got.backward()
    assert batch.docs.sparse.grad is not None and batch.query.sparse.grad is None
    assert needs({"lex_if": LossTermConfig(loss="contrastive", channel="sparse_idf")}) == {"idf"}
    with pytest.raises(ValueError, match="IDF query bags"):
        two_query_batch().scores("sparse_idf")
