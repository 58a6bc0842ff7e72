"""Reading training logs (train.tsv) for the report."""

from __future__ import annotations

import math

import pytest

from uniret.core.errors import DataError
from uniret.evaluation.train_logs import find_train_logs, read_train_tsv


def test_reads_columns_with_blank_cells_as_nan(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("step\tlr\tloss\tactive_terms_d\n1\t0.1\t2.5\t\n2\t0.1\t1.5\t40\n")
    cols = read_train_tsv(path)
    assert cols["step"] == [1.0, 2.0] and cols["loss"] == [2.5, 1.5]
    assert math.isnan(cols["active_terms_d"][0]) and cols["active_terms_d"][1] == 40.0


def test_bad_cell_names_file_line_and_column(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("step\tloss\n1\t2.0\n2\toops\n")
    with pytest.raises(DataError, match=r"train\.tsv:3 \[loss\]: not a number: 'oops'"):
        read_train_tsv(path)


def test_header_without_step_is_refused(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("loss\n1.0\n")
    with pytest.raises(DataError, match=r"train\.tsv:1 \[step\]"):
        read_train_tsv(path)


def test_ragged_row_is_refused(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("step\tloss\n1\t2.0\t9\n")
    with pytest.raises(DataError, match=r"train\.tsv:2: 3 fields, header has 2"):
        read_train_tsv(path)


def test_find_train_logs_names_missing_stages(tmp_path):
    (tmp_path / "warmup" / "metrics").mkdir(parents=True)
    (tmp_path / "warmup" / "metrics" / "train.tsv").write_text("step\tloss\n1\t1\n")
    logs, notes = find_train_logs(tmp_path, ["warmup", "distill"])
    assert list(logs) == ["warmup"] and len(notes) == 1 and notes[0].startswith("distill: no training log")
