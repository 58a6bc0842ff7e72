"""The structural pass of validation: read a BEIR dataset with the strict readers into tables.

Each file becomes a pandas DataFrame with its source line numbers (so a failed expectation can
quote offending lines), or a DataProblem when the strict reader rejects it (malformed JSON, a
missing field, a wrong type, bytes that are not UTF-8). A broken file never stops the others
from being read: validation reports every problem at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from uniret.core.errors import DataError, DataProblem
from uniret.data.beir import (
    CORPUS_FILE,
    QRELS_DIR,
    QUERIES_FILE,
    iter_corpus_lines,
    iter_qrels,
    iter_queries_lines,
)

CORPUS, QUERIES, QRELS = "corpus", "queries", "qrels"

# Columns added for the referential-integrity expectations on qrels.
QUERY_KNOWN = "query_in_queries"
DOC_KNOWN = "doc_in_corpus"


@dataclass
class FileTable:
    """One file of a dataset: its rows as a DataFrame, or the structural problem that stopped it."""

    kind: str  # corpus | queries | qrels
    path: Path
    rel: str  # path inside the dataset folder, e.g. qrels/test.tsv
    frame: pd.DataFrame | None = None
    problem: DataProblem | None = None

    @property
    def ok(self) -> bool:
        return self.frame is not None


@dataclass
class DatasetTables:
    """Every file of one dataset after the structural pass."""

    name: str
    root: Path
    files: list[FileTable] = field(default_factory=list)
    problems: list[DataProblem] = field(default_factory=list)  # dataset-level (missing folder, no qrels)

    def of_kind(self, kind: str) -> list[FileTable]:
        return [f for f in self.files if f.kind == kind]

    def single(self, kind: str) -> FileTable | None:
        found = self.of_kind(kind)
        return found[0] if found else None

    @property
    def all_problems(self) -> list[DataProblem]:
        return self.problems + [f.problem for f in self.files if f.problem is not None]


def _corpus_frame(path: Path) -> pd.DataFrame:
    rows = [(ln, d.id, d.title, d.text) for ln, d in iter_corpus_lines(path)]
    frame = pd.DataFrame(rows, columns=["line", "_id", "title", "text"])
    frame["text_chars"] = frame["text"].str.strip().str.len().astype("int64")
    return frame


def _queries_frame(path: Path) -> pd.DataFrame:
    rows = [(ln, q.id, q.text) for ln, q in iter_queries_lines(path)]
    frame = pd.DataFrame(rows, columns=["line", "_id", "text"])
    frame["text_chars"] = frame["text"].str.strip().str.len().astype("int64")
    return frame


def _qrels_frame(path: Path) -> pd.DataFrame:
    frame = pd.DataFrame(list(iter_qrels(path)), columns=["line", "query-id", "corpus-id", "score"])
    return frame.astype({"line": "int64", "score": "int64"})


READERS = {CORPUS: _corpus_frame, QUERIES: _queries_frame, QRELS: _qrels_frame}


def _read(kind: str, root: Path, rel: str) -> FileTable:
    table = FileTable(kind=kind, path=root / rel, rel=rel)
    try:
        table.frame = READERS[kind](table.path)
    except DataError as exc:
        table.problem = exc.problems[0]
    return table


def _link_qrels(tables: DatasetTables) -> None:
    """Mark each qrels row whose ids exist in queries.jsonl / corpus.jsonl (when those loaded)."""
    corpus, queries = tables.single(CORPUS), tables.single(QUERIES)
    doc_ids = set(corpus.frame["_id"]) if corpus and corpus.ok else None
    query_ids = set(queries.frame["_id"]) if queries and queries.ok else None
    for qrels in tables.of_kind(QRELS):
        if not qrels.ok:
            continue
        if query_ids is not None:
            qrels.frame[QUERY_KNOWN] = qrels.frame["query-id"].isin(query_ids)
        if doc_ids is not None:
            qrels.frame[DOC_KNOWN] = qrels.frame["corpus-id"].isin(doc_ids)


def load_tables(root: Path, name: str, required_splits: dict[str, str] | None = None) -> DatasetTables:
    """Read dataset `name` under `root` with the strict readers.

    `required_splits` maps a split the pipeline uses to the params key that asks for it
    (e.g. {"test": "data.eval_split"}); a missing one is reported as a problem.
    """
    folder = Path(root) / name
    tables = DatasetTables(name=name, root=folder)
    if not folder.is_dir():
        tables.problems.append(DataProblem(folder, None, None, f"dataset {name!r} not found under {root}"))
        return tables
    tables.files.append(_read(CORPUS, folder, CORPUS_FILE))
    tables.files.append(_read(QUERIES, folder, QUERIES_FILE))
    splits = sorted(p.stem for p in (folder / QRELS_DIR).glob("*.tsv"))
    if not splits:
        tables.problems.append(DataProblem(folder / QRELS_DIR, None, None, "no qrels/<split>.tsv files"))
    for split, key in (required_splits or {}).items():
        if splits and split not in splits:
            tables.problems.append(
                DataProblem(folder / QRELS_DIR / f"{split}.tsv", None, None, f"split {split!r} ({key}) not found")
            )
    for split in splits:
        tables.files.append(_read(QRELS, folder, f"{QRELS_DIR}/{split}.tsv"))
    _link_qrels(tables)
    return tables
