"""The incremental metrics TSV."""

from __future__ import annotations

from uniret.training.metrics import LogWindow, MetricsTsv


def test_rows_are_flushed_as_written_and_new_keys_extend_the_header(tmp_path):
    tsv = MetricsTsv(tmp_path / "m" / "train.tsv")
    tsv.start()
    tsv.write({"step": 1, "lr": 0.5, "loss": 2.0})
    # Flushed: readable by another process before close.
    assert (tmp_path / "m" / "train.tsv").read_text() == "step\tlr\tloss\n1\t0.5\t2.0\n"
    tsv.write({"step": 2, "lr": 0.25, "loss": 1.5, "active_terms_q": 12.0})
    tsv.close()
    lines = (tmp_path / "m" / "train.tsv").read_text().splitlines()
    assert lines == ["step\tlr\tloss\tactive_terms_q", "1\t0.5\t2.0\t", "2\t0.25\t1.5\t12.0"]


def test_resume_drops_rows_after_the_checkpoint(tmp_path):
    tsv = MetricsTsv(tmp_path / "train.tsv")
    tsv.start()
    for step in range(1, 6):
        tsv.write({"step": step, "loss": float(step)})
    tsv.close()
    again = MetricsTsv(tmp_path / "train.tsv")
    again.start(resume_step=3)
    again.write({"step": 4, "loss": 40.0})
    again.close()
    assert [r["loss"] for r in again.read_rows()] == ["1.0", "2.0", "3.0", "40.0"]


def test_fresh_start_truncates(tmp_path):
    (tmp_path / "train.tsv").write_text("step\tloss\n1\t9.0\n")
    tsv = MetricsTsv(tmp_path / "train.tsv")
    tsv.start()
    tsv.close()
    assert tsv.read_rows() == []


def test_log_window_means_and_state_roundtrip():
    window = LogWindow()
    window.add({"loss": 1.0, "a": 2.0})
    window.add({"loss": 3.0})
    restored = LogWindow()
    restored.load_state_dict(window.state_dict())
    assert restored.means() == {"loss": 2.0, "a": 2.0}
    restored.reset()
    assert restored.means() == {}
