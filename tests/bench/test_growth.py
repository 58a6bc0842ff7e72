"""Synthetic corpora for the growth curve: one copy of a real document in every form, the real
corpus's shape (checked by KS statistics that a broken synthesis fails), and the agreement figure."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from uniret.bench.growth import top10_agreement
from uniret.bench.synthetic import RealCorpus, SyntheticCorpus, shape_statistics


@pytest.fixture(scope="module")
def real() -> RealCorpus:
    """400 documents of Zipf-distributed words with varied lengths, their vectors and impacts."""
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(3000)])
    p = 1.0 / np.arange(1, len(vocab) + 1)
    texts = [" ".join(rng.choice(vocab, size=int(rng.lognormal(4.5, 0.5)), p=p / p.sum())) for _ in range(400)]
    vectors = rng.standard_normal((400, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    impacts = sp.random(400, 500, density=0.05, format="csr", random_state=1, dtype=np.float32)
    impacts.data = np.rint(impacts.data * 200 + 1).astype(np.float32)
    return RealCorpus.from_texts(vectors, impacts, texts)


def test_each_synthetic_document_is_one_real_document_in_every_form(real):
    corpus = SyntheticCorpus(real, 3000, noise=0.1, swap_terms=0.2, seed=3)
    dense, impacts = corpus.dense(), corpus.impacts()
    texts = list(corpus.texts())
    assert dense.shape == (3000, 16) and impacts.shape == (3000, 500) and len(texts) == 3000
    assert [d for d, _ in texts] == corpus.docids
    np.testing.assert_allclose(np.linalg.norm(dense, axis=1), 1.0, rtol=1e-5)  # real vectors are unit norm
    assert np.all(impacts.data >= 1) and np.array_equal(impacts.data, np.rint(impacts.data))
    # the copied document is the nearest real vector, and its text shares most words with the synthetic one
    assert np.mean((dense @ real.vectors.T).argmax(axis=1) == corpus.base) > 0.99
    source = [set(real.vocab[real.words[real.word_offsets[b]:real.word_offsets[b + 1]]]) for b in corpus.base[:50]]
    shared = [len(set(t.split()) & s) / len(set(t.split())) for (_, t), s in zip(texts[:50], source, strict=True)]
    assert np.mean(shared) > 0.7
    assert list(SyntheticCorpus(real, 3000, 0.1, 0.2, seed=3).texts())[:5] == texts[:5]  # same seed, same corpus


def test_synthesis_keeps_the_lengths_and_document_frequencies(real):
    corpus = SyntheticCorpus(real, 4000, noise=0.1, swap_terms=0.2, seed=4)
    stats = shape_statistics(corpus, corpus.impacts())
    assert set(stats) == {"text_length_ks", "text_posting_df_ks", "impact_length_ks", "impact_posting_df_ks"}
    assert max(stats.values()) < 0.1, stats


class UniformWords(SyntheticCorpus):
    """A broken synthesis: half the words replaced by words drawn uniformly from the vocabulary."""

    def word_ids(self, lo, hi):
        words, offsets = super().word_ids(lo, hi)
        rng = np.random.default_rng(7)
        swap = rng.random(len(words)) < 0.5
        words = words.copy()
        words[swap] = rng.integers(0, len(self.real.vocab), int(swap.sum()))
        return words, offsets


def test_the_shape_check_fails_a_synthesis_that_draws_words_uniformly(real):
    honest = SyntheticCorpus(real, 4000, noise=0.1, swap_terms=0.2, seed=5)
    broken = UniformWords(real, 4000, noise=0.1, swap_terms=0.2, seed=5)
    good = shape_statistics(honest, honest.impacts())["text_posting_df_ks"]
    bad = shape_statistics(broken, honest.impacts())["text_posting_df_ks"]
    assert good < 0.1 < bad, (good, bad)


def test_top10_agreement_counts_shared_documents():
    exact = {"q1": {f"d{i}": 10.0 - i for i in range(10)}, "q2": {"a": 1.0}}
    found = {"q1": {**{f"d{i}": 10.0 - i for i in range(9)}, "x": 0.5}, "q2": {"a": 2.0}}
    assert top10_agreement(found, exact) == round((0.9 + 1.0) / 2, 4)
    assert top10_agreement(exact, exact) == 1.0
