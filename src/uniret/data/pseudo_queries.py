"""Pseudo-query texts for training a query-side model without held-out queries.

The static query tower is distilled on short texts that look like queries: the train split's own
queries (outside the dev carve), document titles and document sentences. A dev or test query must
never be among them (the fusion weights are chosen on dev and the figures reported on test), so
`pseudo_queries` drops every text equal to a query of a held-out split, after collecting it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from uniret.data.beir import BeirDataset

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass
class PseudoQuerySpec:
    """What to draw (mirrors config.retrieval.StaticQueryConfig's text settings)."""

    train_queries: bool
    titles: bool
    sentences: int
    other_corpus_sentences: int
    min_words: int
    max_words: int
    seed: int


def normalise(text: str) -> str:
    """The form texts are compared in: lower case, single spaces."""
    return " ".join(text.lower().split())


# a run of text with no sentence end (NFCorpus's and NPL's preprocessed texts have no punctuation)
# is cut into windows of this many words, about a long query's length
WINDOW_WORDS = 12


def sentences_of(text: str, min_words: int, max_words: int) -> list[str]:
    """The sentences of a document text with min_words..max_words words; a longer run of words is cut
    into consecutive windows of WINDOW_WORDS (at most max_words) words."""
    out = []
    window = max(min_words, min(max_words, WINDOW_WORDS))
    for sentence in _SENTENCE_END.split(text):
        words = sentence.split()
        if len(words) > max_words:
            pieces = [words[i:i + window] for i in range(0, len(words), window)]
            out.extend(" ".join(p) for p in pieces if len(p) >= min_words)
        elif len(words) >= min_words:
            out.append(" ".join(words))
    return out


def sample_sentences(datasets_docs: Iterable, n: int, spec: PseudoQuerySpec, rng: random.Random) -> list[str]:
    """Up to `n` sentences drawn uniformly from every sentence of the documents."""
    if n <= 0:
        return []
    pool = [s for doc in datasets_docs for s in sentences_of(doc.text, spec.min_words, spec.max_words)]
    return rng.sample(pool, n) if len(pool) > n else pool


def held_out_queries(datasets: Sequence[BeirDataset], train_dataset: str, train_split: str,
                     dev_qids: set[str]) -> set[str]:
    """Normalised texts of every query a pseudo-query must not be: every query of a dataset other
    than the train dataset's train split (test, dev, any split) and the dev carve of the train split."""
    held: set[str] = set()
    for ds in datasets:
        queries = ds.queries()
        train_ids = set(ds.qrels(train_split)) - dev_qids if ds.name == train_dataset and train_split in ds.splits() else set()
        for split in ds.splits():
            for qid in ds.qrels(split):
                if qid in queries and qid not in train_ids:
                    held.add(normalise(queries[qid]))
    return held


def pseudo_queries(train: BeirDataset, others: Sequence[BeirDataset], train_split: str, dev_qids: set[str],
                   spec: PseudoQuerySpec) -> tuple[list[str], dict[str, int]]:
    """(texts, counts by source): train queries outside the dev carve, train-corpus titles and
    sentences, and sentences of the other corpora (documents only); no held-out query among them."""
    rng = random.Random(spec.seed)
    counts: dict[str, int] = {}
    texts: list[str] = []

    def add(source: str, items: Iterable[str]) -> None:
        items = [t for t in items if t.strip()]
        counts[source] = len(items)
        texts.extend(items)

    if spec.train_queries and train_split in train.splits():
        add("train_queries", [t for q, t in train.split_queries(train_split).items() if q not in dev_qids])
    docs = list(train.iter_corpus())
    if spec.titles:
        add("titles", [d.title for d in docs if len(d.title.split()) >= 2])
    add(f"sentences/{train.name}", sample_sentences(docs, spec.sentences, spec, rng))
    for other in others:
        add(f"sentences/{other.name}", sample_sentences(other.iter_corpus(), spec.other_corpus_sentences, spec, rng))
    held = held_out_queries([train, *others], train.name, train_split, dev_qids)
    kept = [t for t in texts if normalise(t) not in held]
    counts["dropped_as_held_out_query"] = len(texts) - len(kept)
    return kept, counts
