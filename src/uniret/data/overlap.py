"""Which test queries of a dataset overlap its train split ("seen") and which do not ("novel").

SciFact's official split shares judged documents and near-duplicate claims between train and test
(two thirds of its test claims), so a model that learned its train pairs scores those claims by
lookup. A test query is *seen* when

- one of its judged documents is also judged for a train query (a shared judged document), or
- some train query's word set has Jaccard similarity >= `jaccard` with its own (a near duplicate:
  often the same sentence negated or with one word swapped);

every other test query is *novel*. Words are lower-cased runs of letters, digits and underscores
(`\\w+`). The rule reads only the data files, never a model's scores.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

_WORD = re.compile(r"\w+")
SEEN, NOVEL = "seen", "novel"


def word_set(text: str) -> frozenset[str]:
    """The query's distinct lower-cased words."""
    return frozenset(_WORD.findall(text.lower()))


@dataclass(frozen=True)
class OverlapSplit:
    """The test queries split by their overlap with the train split."""

    seen: frozenset[str]
    novel: frozenset[str]
    shared_document: int  # test queries with a judged document also judged for a train query
    near_duplicate: int  # test queries with a train query of word-set Jaccard >= jaccard
    jaccard: float

    def rule(self) -> str:
        """The definition, in words, for reports."""
        return (f"seen: a judged document also judged for a train query, or a train query with word-set "
                f"Jaccard >= {self.jaccard:g}; novel: neither")

    def counts(self) -> dict[str, int]:
        return {SEEN: len(self.seen), NOVEL: len(self.novel), "shared_document": self.shared_document,
                "near_duplicate": self.near_duplicate}


def _near_duplicates(test_words: Mapping[str, frozenset[str]], train_words: list[frozenset[str]],
                     jaccard: float) -> set[str]:
    """Test queries with some train query at word-set Jaccard >= jaccard (an inverted index over the
    train words, so only train queries sharing a word are compared)."""
    postings: dict[str, list[int]] = defaultdict(list)
    for i, words in enumerate(train_words):
        for w in words:
            postings[w].append(i)
    found = set()
    for qid, words in test_words.items():
        shared: dict[int, int] = defaultdict(int)
        for w in words:
            for i in postings.get(w, ()):
                shared[i] += 1
        for i, inter in shared.items():
            union = len(words) + len(train_words[i]) - inter
            if union and inter / union >= jaccard:
                found.add(qid)
                break
    return found


def overlap_split(queries: Mapping[str, str], train_qrels: Mapping[str, Mapping[str, int]],
                  test_qrels: Mapping[str, Mapping[str, int]], jaccard: float = 0.5) -> OverlapSplit:
    """Split the judged test queries into seen and novel (see the module doc).

    `queries` must hold the text of every train and test query; a missing one is an error naming it.
    """
    if not 0.0 < jaccard <= 1.0:
        raise ValueError(f"jaccard must be in (0, 1], got {jaccard}")
    missing = sorted(q for q in (*train_qrels, *test_qrels) if q not in queries)
    if missing:
        raise ValueError(f"queries without text: {missing[:5]} ({len(missing)} in all)")
    train_docs = {d for judged in train_qrels.values() for d, rel in judged.items() if rel > 0}
    shared = {q for q, judged in test_qrels.items() if any(rel > 0 and d in train_docs for d, rel in judged.items())}
    near = _near_duplicates({q: word_set(queries[q]) for q in test_qrels},
                            [word_set(queries[q]) for q in train_qrels], jaccard)
    seen = shared | near
    return OverlapSplit(frozenset(seen), frozenset(set(test_qrels) - seen), len(shared), len(near), jaccard)
