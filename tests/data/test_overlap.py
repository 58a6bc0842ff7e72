"""The seen / novel split of a test split against its train split, from the data files."""

from __future__ import annotations

import pytest

from uniret.data.beir import BeirDataset
from uniret.data.overlap import overlap_split, word_set
from uniret.evaluation.overlap_scores import dataset_split, novel_value, overlap_section, subset_mean


def test_hand_counted_split():
    queries = {
        "t1": "Vitamin D lowers fracture risk",
        "t2": "Aspirin prevents colon cancer",
        "e1": "Vitamin D does not lower fracture risk",  # near duplicate of t1: 5/7 words shared
        "e2": "Statins cause muscle pain",  # shares judged document d2 with t2
        "e3": "Coffee improves memory in adults",  # neither
        "e4": "Aspirin and memory",  # 1/6 words with t2: not a near duplicate
    }
    train = {"t1": {"d1": 1}, "t2": {"d2": 1}}
    test = {"e1": {"d9": 1}, "e2": {"d2": 1, "d7": 1}, "e3": {"d3": 1}, "e4": {"d4": 1}}
    split = overlap_split(queries, train, test, jaccard=0.5)
    assert split.seen == {"e1", "e2"} and split.novel == {"e3", "e4"}
    assert split.counts() == {"seen": 2, "novel": 2, "shared_document": 1, "near_duplicate": 1}
    assert overlap_split(queries, train, test, jaccard=0.8).seen == {"e2"}  # 5/7 < 0.8
    assert word_set("Vitamin-D, vitamin d!") == {"vitamin", "d"}


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="jaccard"):
        overlap_split({}, {}, {}, jaccard=0.0)
    with pytest.raises(ValueError, match=r"queries without text: \['e1'\]"):
        overlap_split({"t1": "a"}, {"t1": {"d": 1}}, {"e1": {"d": 1}})


def test_scifact_test_split_counts(shared_data):
    split = dataset_split(BeirDataset(shared_data / "scifact"), "train", "test", 0.5)
    assert split.counts() == {"seen": 198, "novel": 102, "shared_document": 196, "near_duplicate": 132}
    assert dataset_split(BeirDataset(shared_data / "cranfield"), "train", "test", 0.5) is None  # no train split


def test_subset_means_and_the_metrics_section():
    queries = {"t1": "a b", "e1": "a b", "e2": "x y"}
    split = overlap_split(queries, {"t1": {"d": 1}}, {"e1": {"d5": 1}, "e2": {"d6": 1}})
    per_query = {"uni": {"scifact": {"e1": {"ndcg@10": 1.0}, "e2": {"ndcg@10": 0.25}}},
                 "bm25": {"nfcorpus": {"q": {"ndcg@10": 0.5}}}}
    section = overlap_section(split, per_query, "scifact", ["ndcg@10"])
    assert section["seen"] == {"uni": {"ndcg@10": 1.0}} and section["novel"] == {"uni": {"ndcg@10": 0.25}}
    assert section["counts"]["novel"] == 1 and "Jaccard >= 0.5" in section["rule"]
    assert novel_value({"overlap": {"scifact": section}}, "scifact", "uni", "ndcg@10") == 0.25
    assert novel_value({}, "scifact", "uni", "ndcg@10") is None
    assert subset_mean({"a": {"m": 1.0}}, ["a", "missing"], ["m"]) == {"m": 0.5}  # unretrieved judged query: 0
    assert subset_mean({}, [], ["m"]) is None
