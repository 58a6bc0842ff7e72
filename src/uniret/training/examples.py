"""Training examples (query, positive, negatives) and their collation into tokenized groups.

An example is one (query, positive) pair with group_size - 1 negatives, the positive first: the
batch layout every loss reads (uniret.losses.base: Q queries, Q * G documents in query order).
Negatives come from a negatives file (BM25's or the mine stage's); a query with too few is
topped up with random corpus documents (random negatives), drawn from a generator seeded by
(seed, query id, positive), so an example never depends on which other queries are present.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from uniret.core.runs import Run
from uniret.data.negatives import NegativesRecord


@dataclass(frozen=True)
class TrainExample:
    """One query with its group of documents: the positive first, then the negatives."""

    query_id: str
    query: str
    doc_ids: tuple[str, ...]


def build_examples(
    records: Iterable[NegativesRecord],
    group_size: int,
    corpus_ids: Sequence[str],
    seed: int,
    max_queries: int | None = None,
) -> list[TrainExample]:
    """One example per (query, positive) of `records`, each with group_size - 1 negatives.

    Negatives never include a judged positive of the query. Records whose positives are all
    missing from the corpus are dropped (the slice may have cut them).
    """
    known = set(corpus_ids)
    examples: list[TrainExample] = []
    for n_queries, record in enumerate(sorted(records, key=lambda r: r.query_id)):
        if max_queries is not None and n_queries >= max_queries:
            break
        positives = [p for p in record.positives if p in known]
        excluded = set(record.positives)
        pool = [d for d in dict.fromkeys(record.negatives) if d in known and d not in excluded]
        for pos in positives:
            rng = random.Random(f"{seed}:{record.query_id}:{pos}")
            need = group_size - 1
            negatives = rng.sample(pool, need) if len(pool) >= need else list(pool)
            while len(negatives) < need:  # top up with random corpus documents
                cand = corpus_ids[rng.randrange(len(corpus_ids))]
                if cand not in excluded and cand not in negatives:
                    negatives.append(cand)
            examples.append(TrainExample(record.query_id, record.query, (pos, *negatives)))
    return examples


def resample_examples(
    pairs: Sequence[tuple[str, str, float]],
    n: int,
    group_size: int,
    corpus_ids: Sequence[str],
    seed: int,
    prefix: str = "click",
) -> list[TrainExample]:
    """`n` examples drawn with replacement from weighted (query text, positive doc, weight) `pairs`,
    each with probability proportional to its weight, and group_size - 1 random corpus negatives.

    Importance resampling: an IPS weight becomes how often a pair is trained on, so every loss term
    stays an unweighted mean. Negatives are never a doc paired with the same query text. Query ids are
    `prefix:<pair index>` (no qrels or BM25 run knows them).
    """
    kept = [(i, q, d, w) for i, (q, d, w) in enumerate(pairs) if w > 0]
    if not kept or n <= 0:
        return []
    positives: dict[str, set[str]] = {}
    for _, q, d, _ in kept:
        positives.setdefault(q, set()).add(d)
    rng = random.Random(f"{seed}:{prefix}")
    drawn = rng.choices(kept, weights=[w for *_, w in kept], k=n)
    examples = []
    for draw, (i, query, pos, _) in enumerate(drawn):
        excluded = positives[query]
        negatives: list[str] = []
        guard = 0
        while len(negatives) < group_size - 1 and guard < 100 * group_size:
            guard += 1
            cand = corpus_ids[rng.randrange(len(corpus_ids))]
            if cand not in excluded and cand not in negatives:
                negatives.append(cand)
        if len(negatives) < group_size - 1:
            raise ValueError(f"resample_examples: the corpus ({len(corpus_ids)} docs) has too few documents "
                             f"outside query {query!r}'s clicked ones for groups of {group_size}")
        examples.append(TrainExample(f"{prefix}:{i}:{draw}", query, (pos, *negatives)))
    return examples


def _tokenize(tokenizer, texts: list[str], max_length: int) -> dict[str, torch.Tensor]:
    enc = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}


class GroupCollator:
    """Examples -> {"query", "docs": tokenized tensors, "group_size", texts, optional "bm25" and
    "bm25_minmax" [Q, G]}.

    With `teacher_tokenizer`, the batch also holds "teacher_query"/"teacher_docs" tokenized for
    a frozen teacher whose tokenizer or lengths differ from the student's (LED).
    """

    def __init__(
        self,
        tokenizer,
        corpus: Mapping[str, str],
        query_max_length: int,
        doc_max_length: int,
        bm25_run: Run | None = None,
        teacher_tokenizer=None,
        teacher_lengths: tuple[int, int] | None = None,
    ):
        self.tokenizer = tokenizer
        self.corpus = corpus
        self.lengths = (query_max_length, doc_max_length)
        self.bm25_run = bm25_run
        self.teacher_tokenizer = teacher_tokenizer
        self.teacher_lengths = teacher_lengths or self.lengths

    def __call__(self, examples: list[TrainExample]) -> dict[str, Any]:
        group = len(examples[0].doc_ids)
        queries = [e.query for e in examples]
        doc_texts = [self.corpus[d] for e in examples for d in e.doc_ids]
        batch: dict[str, Any] = {
            "query": _tokenize(self.tokenizer, queries, self.lengths[0]),
            "docs": _tokenize(self.tokenizer, doc_texts, self.lengths[1]),
            "group_size": group,
            "query_text": queries,
            "doc_text": doc_texts,
        }
        if self.bm25_run is not None:
            batch["bm25"] = bm25_group_scores(self.bm25_run, examples)
            batch["bm25_minmax"] = bm25_group_scores(self.bm25_run, examples, minmax=True)
        if self.teacher_tokenizer is not None:
            batch["teacher_query"] = _tokenize(self.teacher_tokenizer, queries, self.teacher_lengths[0])
            batch["teacher_docs"] = _tokenize(self.teacher_tokenizer, doc_texts, self.teacher_lengths[1])
        return batch


def bm25_group_scores(run: Run, examples: Sequence[TrainExample], minmax: bool = False) -> torch.Tensor:
    """[Q, G] BM25 scores of each example's group; a document outside the query's BM25 run gets
    the run's lowest score (it ranked below everything BM25 returned), or 0 for an empty run.

    `minmax`: each query's scores rescaled by its run's lowest and highest score to [0, 1], as
    the served fusion (uniret.retrieval.fusion.minmax) rescales them; all 1 when they are equal.
    """
    rows = []
    for e in examples:
        hits = run.get(e.query_id, {})
        floor = min(hits.values()) if hits else 0.0
        row = [hits.get(d, floor) for d in e.doc_ids]
        if minmax:
            top = max(hits.values()) if hits else 0.0
            row = [1.0 if top == floor else (s - floor) / (top - floor) for s in row]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float32)


class PairCollator:
    """Examples -> tokenized (query, document) pairs of a cross-encoder, G per query, positive first."""

    def __init__(self, reranker, corpus: Mapping[str, str]):
        self.reranker = reranker
        self.corpus = corpus

    def __call__(self, examples: list[TrainExample]) -> dict[str, Any]:
        pairs = [(e.query, self.corpus[d]) for e in examples for d in e.doc_ids]
        return {"pairs": self.reranker.tokenize(pairs), "group_size": len(examples[0].doc_ids)}
