"""Finding 4 of issue 12: an error quotes at most a bounded excerpt of a record, whatever its size."""

from __future__ import annotations

import json

import pytest

MAX_MESSAGE = 20_000  # characters of stderr allowed for one failed validate run (a few lines per problem)


def _append(path, line: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")


@pytest.mark.parametrize("where", ["document text", "document id", "qrels score"])
def test_a_50mb_record_gives_a_short_message(where, tmp_path, small_data, params_file, cli, snapshot):
    huge = "x" * (50 << 20 if where == "document text" else 5 << 20)
    ds = small_data / "scifact"
    if where == "document text":
        _append(ds / "corpus.jsonl", json.dumps({"_id": "huge-doc", "title": "", "text": huge}))
    elif where == "document id":
        _append(ds / "corpus.jsonl", json.dumps({"_id": huge, "title": "", "text": "fine"}))
        _append(ds / "corpus.jsonl", json.dumps({"_id": huge, "title": "", "text": "duplicate id"}))
    else:
        _append(ds / "qrels" / "test.tsv", f"q\td\t{huge}")
    params = params_file()
    before = snapshot(tmp_path)
    r = cli("validate", "--params", str(params), "--profile", "tiny", "--data", str(small_data),
            "--artifacts", str(tmp_path / "artifacts"))
    assert r.returncode == 1, r.stderr[-2000:]
    assert len(r.stderr) < MAX_MESSAGE, f"{len(r.stderr)} chars of stderr: {r.stderr[:3000]}"
    assert "scifact" in r.stderr and "chars)" in r.stderr  # names the file and says how long the value was
    assert snapshot(tmp_path) == before
