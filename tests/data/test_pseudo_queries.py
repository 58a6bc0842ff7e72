"""Pseudo-queries for the static tower never include a dev or test query."""

from __future__ import annotations

import json

from uniret.config.sections import DevSplitConfig
from uniret.data.beir import BeirDataset
from uniret.data.dev_split import dev_query_ids
from uniret.data.pseudo_queries import PseudoQuerySpec, normalise, pseudo_queries, sentences_of

SPEC = PseudoQuerySpec(train_queries=True, titles=True, sentences=2000, other_corpus_sentences=300,
                       min_words=4, max_words=40, seed=7)


def _all_queries_of(ds: BeirDataset, splits: list[str], exclude: set[str] = frozenset()) -> set[str]:
    queries = ds.queries()
    return {normalise(queries[q]) for s in splits for q in ds.qrels(s) if q in queries and q not in exclude}


def test_real_collections_give_no_held_out_query(shared_data):
    scifact = BeirDataset(shared_data / "scifact", "scifact")
    nfcorpus = BeirDataset(shared_data / "nfcorpus", "nfcorpus")
    dev = dev_query_ids(scifact.qrels("train"), DevSplitConfig(fraction=0.2, seed=29))
    texts, counts = pseudo_queries(scifact, [nfcorpus], "train", set(dev), SPEC)
    assert counts["train_queries"] == len(scifact.qrels("train")) - len(dev)
    assert counts["titles"] > 1000 and counts["sentences/scifact"] == 2000 and counts["sentences/nfcorpus"] == 300
    got = {normalise(t) for t in texts}
    held = (_all_queries_of(scifact, ["test"]) | _all_queries_of(nfcorpus, nfcorpus.splits())
            | {normalise(scifact.queries()[q]) for q in dev})
    assert not got & held
    train_kept = _all_queries_of(scifact, ["train"], exclude=set(dev))
    assert train_kept - held <= got  # the train queries outside the dev carve are used


def test_a_document_sentence_equal_to_a_test_query_is_dropped(tmp_path):
    root = tmp_path / "toy"
    (root / "qrels").mkdir(parents=True)
    leak = "Does vitamin D reduce the risk of falls?"
    docs = [{"_id": "d1", "title": "Vitamin D trials", "text": f"Background here. {leak} We review ten trials."},
            {"_id": "d2", "title": "Falls", "text": "Falls are common in older adults at home."}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [{"_id": "t1", "text": leak}, {"_id": "tr1", "text": "How common are falls in older adults?"},
               {"_id": "dv1", "text": "Vitamin D trials and the risk of falls"}]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nt1\td1\t1\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\ntr1\td2\t1\ndv1\td1\t1\n")
    ds = BeirDataset(root, "toy")
    assert leak in sentences_of(docs[0]["text"], 4, 40)
    texts, counts = pseudo_queries(ds, [], "train", {"dv1"}, SPEC)
    assert leak not in texts and "Vitamin D trials and the risk of falls" not in texts
    assert "How common are falls in older adults?" in texts and "Falls are common in older adults at home." in texts
    assert counts["dropped_as_held_out_query"] == 1


def test_fine_tuning_pairs_never_hold_a_held_out_query(shared_data):
    """The static tower's fine-tuning pairs (index stage): SciFact's train queries with their relevant
    rows, minus the dev carve and the train claims worded exactly as a test claim (BEIR has two)."""
    from uniret.stages.index import _train_pairs

    scifact = BeirDataset(shared_data / "scifact", "scifact")
    docs = list(scifact.iter_corpus())
    dev = set(list(scifact.qrels("train"))[:50])
    pairs = _train_pairs(scifact, [], "train", dev, docs)
    tests = {normalise(t) for t in scifact.split_queries("test").values()}
    dev_texts = {normalise(scifact.queries()[q]) for q in dev}
    assert pairs.texts and len(pairs.texts) == len(pairs.positives)
    assert not {normalise(t) for t in pairs.texts} & (tests | dev_texts)
    train = [q for q in scifact.qrels("train") if q not in dev]
    assert len(pairs.texts) < len(train)  # the two test-worded claims (and any claim without a judged doc) dropped
    judged = scifact.qrels("train")
    relevant: dict[str, set[str]] = {}  # by text: a few claims appear under two query ids
    for q in train:
        relevant.setdefault(scifact.queries()[q], set()).update(d for d, rel in judged[q].items() if rel > 0)
    for text, rows in zip(pairs.texts, pairs.positives, strict=True):
        assert rows and {docs[r].id for r in rows} <= relevant[text]  # rows point at the query's own judged docs
