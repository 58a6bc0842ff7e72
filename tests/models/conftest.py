"""Small helpers for the model tests: single-threaded torch, tokenized mini batches."""

from __future__ import annotations

import pytest
import torch

from uniret.config.models import ModelConfig
from uniret.models.factory import build_model

QUERIES = ["what causes protein misfolding", "effect of vitamin d on bone density"]
DOCS = [
    "Protein misfolding is caused by mutations and cellular stress.",
    "Bone density in adults was unrelated to coffee intake.",
    "Vitamin D supplementation increased bone mineral density in elderly women.",
    "Misfolded proteins aggregate in neurodegenerative disease.",
]


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _tokenize(tokenizer, texts, max_length=32):
    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"]


@pytest.fixture
def tokenize():
    """tokenize(tokenizer, texts, max_length=32) -> (input_ids, attention_mask)."""
    return _tokenize


@pytest.fixture
def queries() -> list[str]:
    return list(QUERIES)


@pytest.fixture
def docs() -> list[str]:
    return list(DOCS)


@pytest.fixture
def build():
    """build(arch, backbone, **fields) -> a fresh model (seeded, eval mode)."""

    def _build(arch: str, backbone: str, **fields):
        torch.manual_seed(0)
        return build_model(ModelConfig(arch=arch, backbone=backbone, **fields)).eval()

    return _build
