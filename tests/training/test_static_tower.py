"""Fine-tuning the static tower against frozen document vectors, on a synthetic corpus whose
relevant documents the distilled tower does not rank first."""

from __future__ import annotations

import numpy as np

from uniret.config.retrieval import StaticQueryConfig
from uniret.training.static_tower import finetune_tower


def _ranks(tower, bags, positives, docs):
    out = []
    for bag, pos in zip(bags, positives, strict=True):
        q = tower[bag].sum(axis=0)
        scores = docs @ (q / np.linalg.norm(q))
        out.append(int((scores > scores[pos[0]]).sum()))
    return out


def test_finetuning_raises_the_relevant_documents_and_the_anchor_holds_other_tokens():
    rng = np.random.default_rng(0)
    vocab, dim, n_docs = 200, 16, 120
    docs = rng.standard_normal((n_docs, dim)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    tower = rng.standard_normal((vocab, dim)).astype(np.float32)
    bags = [rng.choice(100, size=4, replace=False) for _ in range(60)]  # train queries use tokens < 100
    positives = [[int(i)] for i in rng.choice(n_docs, size=60)]
    anchor_bags = [rng.choice(np.arange(100, vocab), size=5, replace=False) for _ in range(50)]  # tokens >= 100
    anchor_targets = np.stack([tower[b].sum(axis=0) / np.linalg.norm(tower[b].sum(axis=0)) for b in anchor_bags])
    cfg = StaticQueryConfig(finetune_epochs=30, finetune_lr=0.05, finetune_batch_size=16, batch_size=16)
    before = _ranks(tower, bags, positives, docs)
    tuned, losses = finetune_tower(tower, bags, positives, docs, anchor_bags, anchor_targets, cfg)
    after = _ranks(tuned, bags, positives, docs)
    assert losses[-1] < losses[0] and len(losses) == 30
    assert np.mean(after) < np.mean(before) / 4, (np.mean(before), np.mean(after))
    # the anchor's tokens still give their targets (cosine near 1), the train queries' tokens moved
    cos = [float(tuned[b].sum(axis=0) @ t / np.linalg.norm(tuned[b].sum(axis=0))) for b, t in zip(anchor_bags, anchor_targets, strict=True)]
    assert min(cos) > 0.95
    assert not np.allclose(tuned[:100], tower[:100])
    off = StaticQueryConfig(finetune_epochs=0)
    same, none = finetune_tower(tower, bags, positives, docs, anchor_bags, anchor_targets, off)
    assert same is tower and none == []
