"""Issue 57 item 2: every command that writes follows one output rule (uniret.utils.owned): `bench --out`
inside the data root (the root itself or below it) is refused like a stage's --artifacts there, in one
line, exit 1, before any work, and the data stays byte for byte."""

from __future__ import annotations

from uniret.cli import main


def test_bench_out_in_the_data_root_is_refused_before_any_work(tmp_path, repo_root, small_data, capsys, snapshot):
    before = snapshot(small_data)
    for out in (small_data / "x", small_data / "scifact", small_data):
        rc = main(["bench", "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--data",
                   str(small_data), "--bundle", str(tmp_path / "no-such-bundle"), "--out", str(out)])
        err = capsys.readouterr().err
        assert rc == 1, err
        lines = [line for line in err.splitlines() if line.startswith("uniret bench: error:")]
        assert len(lines) == 1 and "Traceback" not in err, err
        assert f"refusing to write inside the data root {small_data}" in lines[0], lines[0]
    assert not (small_data / "x").exists()
    assert snapshot(small_data) == before
