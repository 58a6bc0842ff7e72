"""Slices stay within budget, keep every judged doc of kept queries, and are deterministic."""

from uniret.config.sections import SliceConfig
from uniret.data.beir import BeirDataset
from uniret.data.slicing import write_slice


def _summary(ds: BeirDataset):
    docs = {d.id for d in ds.iter_corpus()}
    return docs, {s: ds.qrels(s) for s in ds.splits()}


def test_slice_budget_and_integrity(shared_data, tmp_path):
    # NFCorpus has ~40 judgements per query: the budget must still hold for every split.
    src = BeirDataset(shared_data / "nfcorpus")
    sliced = write_slice(src, tmp_path / "a", SliceConfig(max_queries=24, max_docs=300, seed=3))
    docs, qrels = _summary(sliced)
    assert len(docs) <= 300
    assert set(qrels) == {"train", "dev", "test"}
    for split, q in qrels.items():
        assert 1 <= len(q) <= 24, split
        for judged in q.values():
            assert set(judged) <= docs  # no dangling qrels
    assert set(sliced.queries()) == {qid for q in qrels.values() for qid in q}


def test_slice_is_deterministic_and_full_copy(shared_data, tmp_path):
    src = BeirDataset(shared_data / "scifact")
    a = write_slice(src, tmp_path / "a", SliceConfig(max_queries=10, max_docs=100, seed=5))
    b = write_slice(src, tmp_path / "b", SliceConfig(max_queries=10, max_docs=100, seed=5))
    assert _summary(a) == _summary(b)
    assert len(_summary(a)[0]) == 100
    full = write_slice(src, tmp_path / "full", SliceConfig())
    assert full.corpus_path.read_bytes() == src.corpus_path.read_bytes()
