"""lab/shared_lexicon.py: the MiniLM lexicon head's starting point and its distillation loss."""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from uniret.models.backbones import load_tokenizer


@pytest.fixture(scope="module")
def shared(repo_root):
    spec = importlib.util.spec_from_file_location("shared_lexicon", repo_root / "lab" / "shared_lexicon.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def batch():
    tokenizer = load_tokenizer("minilm")
    return tokenizer(["vitamin deficiency increases tuberculosis risk in adults",
                      "the kinase regulates cell division during mitosis"], padding=True, return_tensors="pt")


def _pooled(student, batch):
    return student(batch["input_ids"], batch["attention_mask"]).sparse


def test_identity_init_is_a_sparse_bag_of_its_own_words(shared, batch):
    student, trainable = shared.build_student(4, "identity", -8.5, seed=0)
    with torch.no_grad():
        pooled = _pooled(student, batch)
    for row, ids, mask in zip(pooled, batch["input_ids"], batch["attention_mask"], strict=True):
        words = {int(i) for i, m in zip(ids[1:], mask[1:], strict=True) if m} - {102}  # drop [CLS], [SEP]
        own = sum(bool(row[w] > 0) for w in words)
        assert own >= 0.6 * len(words)  # stopwords may stay silent, as in SPLADE
        assert int((row > 0).sum()) < 300  # of 30,522
    # only the head learns: the dense module stays MiniLM
    assert {id(p) for p in student.parameters() if p.requires_grad} == {id(p) for p in trainable}
    assert not student.den_layers[0].output.dense.weight.requires_grad


def test_random_init_is_not_sparse(shared, batch):
    student, _ = shared.build_student(4, "random", -8.5, seed=0)
    with torch.no_grad():
        pooled = _pooled(student, batch)
    assert int((pooled > 0).sum(dim=1).min()) > 5000


def test_loss_reaches_a_teacher_entry_the_student_has_not_activated(shared, batch):
    student, _ = shared.build_student(4, "identity", -8.5, seed=0)
    states = shared.head_states(student, batch["input_ids"], batch["attention_mask"])
    with torch.no_grad():
        pooled = _pooled(student, batch)
    silent = int((pooled[0] == 0).nonzero()[0])  # an entry the student does not use in text 0
    loud = int(pooled[0].argmax())  # its strongest entry
    target = torch.zeros_like(pooled)
    target[0, silent] = 1.0  # the teacher uses only `silent`
    loss, student_weights = shared.distill_loss(student, states, target)
    loss.backward()
    bias_grad = student.mlm_head.predictions.bias.grad
    assert torch.equal(student_weights, pooled)
    assert bias_grad[silent] < 0  # a descent step raises the silent entry (log1p(relu) would give 0)
    assert bias_grad[loud] > 0  # and lowers the entry the teacher does not use
