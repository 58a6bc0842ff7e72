"""static_query.init_vocab seen: the tower's initialisation encodes only the tokens of the documents,
the distillation texts and the fine-tuning queries, each row as the whole-vocabulary pass gives it,
and every other token stays at zero through distillation and fine-tuning (it adds nothing to a query)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from uniret.config.models import ModelConfig
from uniret.config.retrieval import StaticQueryConfig
from uniret.training.static_tower import TrainPairs, build_static_tables, token_vectors

DOCS = ["Aspirin lowers the risk of myocardial infarction in adults.",
        "Vitamin D deficiency is common among elderly patients.",
        "Statins reduce cholesterol and cardiovascular events."]
TEXTS = ["does aspirin prevent heart attacks", "vitamin d and bone density in the elderly"]
QUERIES = ["cholesterol drugs and stroke"]


@pytest.fixture(scope="module")
def model():
    from uniret.models.factory import build_model

    return build_model(ModelConfig(arch="unifier", backbone="splade-tiny", query_max_length=32, doc_max_length=64))


def _ids(tokenizer, texts: list[str]) -> set[int]:
    special = set(tokenizer.all_special_ids)
    return {t for ids in tokenizer(texts, add_special_tokens=False)["input_ids"] for t in ids if t not in special}


def test_a_subset_of_tokens_gets_the_rows_of_the_whole_vocabulary_pass(model):
    tok = model.tokenizer
    ids = np.array(sorted(_ids(tok, DOCS)), dtype=np.int64)
    every = token_vectors(model, tok, 1024)
    some = token_vectors(model, tok, 7, ids)  # other batches, other companions: the same rows
    assert some.shape == every.shape == (len(tok), every.shape[1])
    np.testing.assert_allclose(some[ids], every[ids], atol=1e-5)
    rest = np.setdiff1d(np.arange(len(tok)), ids)
    assert not some[rest].any() and np.abs(every[rest]).sum(axis=1).min() > 0


def test_seen_tables_encode_the_corpus_texts_and_queries_tokens_and_leave_the_rest_zero(model):
    tok = model.tokenizer
    cfg = StaticQueryConfig(epochs=2, batch_size=2, finetune_epochs=2, finetune_batch_size=1, init_vocab="seen")
    doc_vectors = np.random.default_rng(0).standard_normal((len(DOCS), 128)).astype(np.float32)
    doc_vectors /= np.linalg.norm(doc_vectors, axis=1, keepdims=True)
    pairs = TrainPairs(texts=list(QUERIES), positives=[[2]])
    asked: list = []

    def vectors(ids):
        asked.append(ids)
        return token_vectors(model, tok, 64, ids)

    tables = build_static_tables(model, tok, DOCS, TEXTS, 32, 64, cfg, pairs=pairs, doc_vectors=doc_vectors,
                                 vectors=vectors)
    seen = _ids(tok, DOCS + TEXTS + QUERIES)
    assert sorted(asked[0].tolist()) == sorted(seen)
    assert tables.meta["init_vocab"] == "seen" and tables.meta["init_tokens"] == len(seen)
    assert tables.meta["finetune_loss_by_epoch"]  # the fine-tuning ran, and still left the others at zero
    nonzero = set(np.flatnonzero(np.abs(tables.tower).sum(axis=1)).tolist())
    assert nonzero == seen
    every = build_static_tables(model, tok, DOCS, TEXTS, 32, 64, dataclasses.replace(cfg, init_vocab="all"),
                                pairs=pairs, doc_vectors=doc_vectors)
    assert every.meta["init_tokens"] == len(tok)


def test_an_unknown_init_vocab_is_refused():
    with pytest.raises(ValueError, match="init_vocab must be all or seen"):
        StaticQueryConfig(init_vocab="some").validate()
