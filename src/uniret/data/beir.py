"""Streaming reader for BEIR-format datasets (corpus.jsonl, queries.jsonl, qrels/<split>.tsv).

Readers are strict: a malformed line, missing field, wrong type or undecodable bytes raises
DataError naming the file, line and field, so bad input never reaches training.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from uniret.core.errors import DataError, DataProblem
from uniret.utils.files import atomic_write_text
from uniret.utils.text import excerpt

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_DIR = "qrels"
QRELS_HEADER = ("query-id", "corpus-id", "score")

Qrels = dict[str, dict[str, int]]


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str

    @property
    def contents(self) -> str:
        """Title and text joined, as BM25 and the encoders see them."""
        return f"{self.title} {self.text}".strip() if self.title else self.text


@dataclass(frozen=True)
class Query:
    id: str
    text: str


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, decoded line); undecodable bytes are reported with their line."""
    try:
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise DataError(DataProblem(path, None, None, "file not found")) from exc
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    DataProblem(path, lineno, None, f"not valid UTF-8 (byte offset {exc.start} in line)")
                ) from exc
            yield lineno, line.rstrip("\r\n")


def _string_field(obj: dict, name: str, path: Path, lineno: int, required: bool = True) -> str:
    if name not in obj:
        if required:
            raise DataError(DataProblem(path, lineno, name, "missing field"))
        return ""
    value = obj[name]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and name == "_id":
        return str(value)  # some BEIR exports write numeric ids
    if not isinstance(value, str):
        raise DataError(DataProblem(path, lineno, name, f"expected a string, got {type(value).__name__}"))
    return value


def json_objects(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-blank line of a JSONL file; a line that is not valid UTF-8,
    not JSON or not an object is a DataError naming the file and line."""
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(DataProblem(path, lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")) from exc
        if not isinstance(obj, dict):
            raise DataError(DataProblem(path, lineno, None, f"expected a JSON object, got {type(obj).__name__}"))
        yield lineno, obj


def iter_corpus_lines(path: str | Path) -> Iterator[tuple[int, Document]]:
    """Stream (line number, document) from a corpus.jsonl file (`title` may be absent)."""
    path = Path(path)
    for lineno, obj in json_objects(path):
        yield lineno, Document(
            id=_string_field(obj, "_id", path, lineno),
            title=_string_field(obj, "title", path, lineno, required=False),
            text=_string_field(obj, "text", path, lineno),
        )


def iter_corpus(path: str | Path) -> Iterator[Document]:
    """Stream documents from a corpus.jsonl file (`title` may be absent)."""
    for _, doc in iter_corpus_lines(path):
        yield doc


def iter_queries_lines(path: str | Path) -> Iterator[tuple[int, Query]]:
    """Stream (line number, query) from a queries.jsonl file."""
    path = Path(path)
    for lineno, obj in json_objects(path):
        yield lineno, Query(id=_string_field(obj, "_id", path, lineno), text=_string_field(obj, "text", path, lineno))


def iter_queries(path: str | Path) -> Iterator[Query]:
    """Stream queries from a queries.jsonl file."""
    for _, query in iter_queries_lines(path):
        yield query


def iter_qrels(path: str | Path) -> Iterator[tuple[int, str, str, int]]:
    """Stream (line, query id, doc id, score) from a qrels TSV with a header row."""
    path = Path(path)
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        parts = line.split("\t")
        if lineno == 1 and tuple(p.strip() for p in parts) == QRELS_HEADER:
            continue
        if len(parts) != 3:
            raise DataError(DataProblem(path, lineno, None, f"expected 3 tab-separated columns, got {len(parts)}"))
        qid, did, score = (p.strip() for p in parts)
        for name, value in (("query-id", qid), ("corpus-id", did)):
            if not value:
                raise DataError(DataProblem(path, lineno, name, "empty id"))
        try:
            score_int = int(score)
        except ValueError as exc:
            raise DataError(DataProblem(path, lineno, "score", f"expected an integer, got {excerpt(score)}")) from exc
        yield lineno, qid, did, score_int


def read_qrels(path: str | Path) -> Qrels:
    """Load a qrels file into {query_id: {doc_id: score}}."""
    qrels: Qrels = {}
    for _, qid, did, score in iter_qrels(path):
        qrels.setdefault(qid, {})[did] = score
    return qrels


def write_qrels(path: str | Path, qrels: Qrels) -> Path:
    """Write {query_id: {doc_id: score}} as a BEIR qrels TSV (with its header), atomically."""
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{s}" for q in sorted(qrels) for d, s in sorted(qrels[q].items())]
    return atomic_write_text(path, "\n".join(lines) + "\n")


@dataclass
class BeirDataset:
    """A BEIR dataset folder; everything is read lazily from disk."""

    root: Path
    name: str = ""
    _queries: dict[str, str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        if not self.name:
            self.name = self.root.name

    @property
    def corpus_path(self) -> Path:
        return self.root / CORPUS_FILE

    @property
    def queries_path(self) -> Path:
        return self.root / QUERIES_FILE

    def qrels_path(self, split: str) -> Path:
        return self.root / QRELS_DIR / f"{split}.tsv"

    def splits(self) -> list[str]:
        """The qrels splits present (train/dev/test)."""
        qdir = self.root / QRELS_DIR
        return sorted(p.stem for p in qdir.glob("*.tsv")) if qdir.is_dir() else []

    def iter_corpus(self) -> Iterator[Document]:
        return iter_corpus(self.corpus_path)

    def corpus(self) -> dict[str, Document]:
        return {d.id: d for d in self.iter_corpus()}

    def queries(self) -> dict[str, str]:
        if self._queries is None:
            self._queries = {q.id: q.text for q in iter_queries(self.queries_path)}
        return self._queries

    def qrels(self, split: str) -> Qrels:
        path = self.qrels_path(split)
        if not path.exists():
            raise DataError(
                DataProblem(path, None, None, f"split {split!r} not found; available: {', '.join(self.splits()) or 'none'}")
            )
        return read_qrels(path)

    def split_queries(self, split: str) -> dict[str, str]:
        """The queries judged in `split`, {id: text}."""
        queries = self.queries()
        return {qid: queries[qid] for qid in self.qrels(split) if qid in queries}
