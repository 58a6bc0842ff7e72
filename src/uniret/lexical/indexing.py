"""Writing a Lucene index in-process (pyserini's LuceneIndexer), atomically.

BM25 and impact indexes share this: documents go to Anserini's SimpleIndexer as JSON strings
({"id", "contents"}) in batches, inside the JVM `ensure_jvm` started, so indexing costs no second
JVM start. The index is built in a temp folder beside its destination and renamed into place,
so a failure never leaves a half-written index behind.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from uniret.lexical.jvm import import_pyserini
from uniret.utils.files import make_temp_dir, replace_dir

log = logging.getLogger("uniret.lexical")


@dataclass(frozen=True)
class IndexStats:
    """What an index build did."""

    path: Path
    docs: int  # documents in the index
    skipped: int  # documents Lucene (or the caller) left out, e.g. empty after preparation
    seconds: float


def _batches(items: Iterable[tuple[str, str]], size: int) -> Iterable[list[tuple[str, str]]]:
    batch: list[tuple[str, str]] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def write_lucene_index(
    docs: Iterable[tuple[str, str]],
    out_dir: str | os.PathLike,
    indexer_args: list[str],
    threads: int,
    batch_size: int,
    total: int | None = None,
    desc: str = "indexing",
) -> IndexStats:
    """Index (doc id, contents) pairs into `out_dir` with Anserini's SimpleIndexer.

    `indexer_args` are IndexCollection flags (e.g. ["-stemmer", "porter"] or ["-impact",
    "-pretokenized"]); `-index` is added here. Documents whose contents are blank are skipped by
    Lucene and counted in `skipped`.
    """
    lucene = import_pyserini("pyserini.index.lucene")
    final = Path(out_dir)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(final.parent, f".{final.name}.tmp-")
    start = time.time()
    added = seen = 0
    try:
        # LuceneIndexer appends -input/-collection/-threads itself.
        indexer = lucene.LuceneIndexer(args=["-index", str(tmp), *indexer_args], threads=threads)
        try:
            with tqdm(total=total, desc=desc, unit="doc", disable=None) as bar:
                for batch in _batches(docs, batch_size):
                    raw = [
                        json.dumps({"id": did, "contents": text}, ensure_ascii=False) for did, text in batch
                    ]
                    # the Java call returns how many documents it indexed (the wrapper drops it)
                    added += int(indexer.object.addRawDocuments(raw))
                    seen += len(batch)
                    bar.update(len(batch))
        finally:
            indexer.close()
        replace_dir(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    stats = IndexStats(path=final, docs=added, skipped=seen - added, seconds=round(time.time() - start, 3))
    if stats.skipped:
        log.warning("%s: %d of %d documents were not indexed (empty contents)", final, stats.skipped, seen)
    log.info("indexed %d docs into %s in %.1fs", stats.docs, final, stats.seconds)
    return stats
