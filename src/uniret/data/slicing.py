"""Deterministic dataset slices: a few queries per split plus their judged docs and distractors."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from uniret.config.sections import SliceConfig
from uniret.core.errors import DataError, DataProblem
from uniret.data.beir import CORPUS_FILE, QRELS_DIR, QRELS_HEADER, QUERIES_FILE, BeirDataset


def _write_qrels(path: Path, qrels: dict[str, dict[str, int]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        fh.write("\t".join(QRELS_HEADER) + "\n")
        for qid, docs in qrels.items():
            for did, score in docs.items():
                fh.write(f"{qid}\t{did}\t{score}\n")


def write_slice(src: BeirDataset, dst: Path, cfg: SliceConfig) -> BeirDataset:
    """Write `src` (sliced per `cfg`, or copied whole) to `dst` in BEIR layout."""
    dst = Path(dst)
    src_dir, dst_dir = src.root.resolve(), dst.resolve()
    if src_dir == dst_dir or src_dir.is_relative_to(dst_dir) or dst_dir.is_relative_to(src_dir):
        # writing the snapshot onto (or inside) the source would truncate the source files
        raise DataError(DataProblem(dst, None, None, f"refusing to write a slice of {src_dir} onto or inside itself"))
    dst.mkdir(parents=True, exist_ok=True)
    if cfg.max_queries is None and cfg.max_docs is None:
        shutil.copyfile(src.corpus_path, dst / CORPUS_FILE)
        shutil.copyfile(src.queries_path, dst / QUERIES_FILE)
        (dst / QRELS_DIR).mkdir(exist_ok=True)
        for split in src.splits():
            shutil.copyfile(src.qrels_path(split), dst / QRELS_DIR / f"{split}.tsv")
        return BeirDataset(dst, src.name)

    rng = random.Random(cfg.seed)
    kept_qrels: dict[str, dict[str, dict[str, int]]] = {}
    judged: set[str] = set()
    splits = src.splits()
    # Each split gets an equal share of the doc budget, so test is not starved by train/dev.
    split_budget = cfg.max_docs // max(len(splits), 1) if cfg.max_docs is not None else None
    for split in splits:
        qrels = src.qrels(split)
        split_judged: set[str] = set()
        candidates = sorted(qrels)
        rng.shuffle(candidates)
        qids = []
        for q in candidates:
            if cfg.max_queries is not None and len(qids) >= cfg.max_queries:
                break
            # Collections with many judgements per query (NFCorpus: ~40) would blow the doc
            # budget: take a query only while its judged docs still fit (always at least one).
            if qids and split_budget is not None and len(split_judged | set(qrels[q])) > split_budget:
                continue
            qids.append(q)
            split_judged.update(qrels[q])
        judged |= split_judged
        kept_qrels[split] = {q: qrels[q] for q in sorted(qids)}

    all_ids = [d.id for d in src.iter_corpus()]
    keep = set(judged)
    if cfg.max_docs is not None and len(keep) < cfg.max_docs:
        others = [d for d in all_ids if d not in keep]
        keep.update(rng.sample(others, min(len(others), cfg.max_docs - len(keep))))
    elif cfg.max_docs is None:
        keep = set(all_ids)

    with (dst / CORPUS_FILE).open("w", encoding="utf-8") as fh:
        for doc in src.iter_corpus():
            if doc.id in keep:
                fh.write(json.dumps({"_id": doc.id, "title": doc.title, "text": doc.text}, ensure_ascii=False) + "\n")
    kept_q = {q for split in kept_qrels.values() for q in split}
    with (dst / QUERIES_FILE).open("w", encoding="utf-8") as fh:
        for qid, text in src.queries().items():
            if qid in kept_q:
                fh.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
    for split, qrels in kept_qrels.items():
        _write_qrels(dst / QRELS_DIR / f"{split}.tsv", qrels)
    return BeirDataset(dst, src.name)
