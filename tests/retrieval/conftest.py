"""Shared fixtures of the retrieval tests: a tiny real SciFact slice encoded once by a UnifieR
encoder built by the models factory on the SPLADE-tiny backbone (pretrained MLM head)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from uniret.config import load_params
from uniret.config.models import ModelConfig
from uniret.config.retrieval import RetrievalConfig
from uniret.data.beir import BeirDataset
from uniret.data.slicing import write_slice
from uniret.retrieval.base import QueryBatch
from uniret.retrieval.encoding import EncodedTexts, TorchTextEncoder

QUERY_LEN, DOC_LEN, BATCH = 32, 128, 32


@dataclass
class EncodedSlice:
    dataset: BeirDataset
    docids: list[str]
    docs: EncodedTexts
    queries: dict[str, str]
    batch: QueryBatch  # the test-split queries, encoded
    qrels: dict[str, dict[str, int]]
    encoder: TorchTextEncoder


@pytest.fixture(scope="session")
def tiny_params(repo_root):
    return load_params(repo_root / "params.yaml", "tiny")


@pytest.fixture(scope="session")
def unifier(tiny_params):
    """(model, tokenizer): UnifieR encoder from the factory, SPLADE-tiny backbone."""
    from uniret.models.factory import build_model

    model = build_model(ModelConfig(arch="unifier", backbone="splade-tiny", query_max_length=QUERY_LEN,
                                    doc_max_length=DOC_LEN))
    return model.eval(), model.tokenizer


@pytest.fixture(scope="session")
def encoded_slice(tmp_path_factory, shared_data, tiny_params, unifier) -> EncodedSlice:
    """The tiny-profile SciFact slice (test split), corpus and queries encoded by torch."""
    data = tiny_params.section("data")
    dataset = write_slice(BeirDataset(shared_data / "scifact", "scifact"), tmp_path_factory.mktemp("scifact"), data.slice)
    model, tokenizer = unifier
    encoder = TorchTextEncoder(model, tokenizer, BATCH, QUERY_LEN, DOC_LEN)
    docs = list(dataset.iter_corpus())
    queries = dataset.split_queries("test")
    batch = QueryBatch.from_dict(queries)
    batch.encoded = encoder.encode(batch.texts, is_query=True)
    return EncodedSlice(
        dataset=dataset,
        docids=[d.id for d in docs],
        docs=encoder.encode([d.contents for d in docs], is_query=False),
        queries=queries,
        batch=batch,
        qrels=dataset.qrels("test"),
        encoder=encoder,
    )


@pytest.fixture(scope="session")
def retrieval_cfg(tiny_params) -> RetrievalConfig:
    return tiny_params.section("retrieval")
