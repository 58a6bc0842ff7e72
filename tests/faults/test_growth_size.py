"""Issue 57 item 7: `uniret bench --only growth` with a corpus size no machine can hold (10^12
documents) is refused in one line naming the setting, before anything is built, instead of trying
to allocate terabytes."""

from __future__ import annotations

from uniret.cli import main


def test_growth_refuses_a_size_that_cannot_fit_before_building(tiny_bundle, shared_data, params_file, tmp_path,
                                                                capsys):
    def edit(raw):
        raw["bench"]["profiles"]["tiny"]["growth"]["sizes"] = [500, 10**12]
        raw["bench"]["growth"]["work_dir"] = str(tmp_path / "work")

    out = tmp_path / "out"
    rc = main(["bench", "--only", "growth", "--params", str(params_file(edit)), "--profile", "tiny",
               "--data", str(shared_data), "--bundle", str(tiny_bundle), "--out", str(out)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("uniret bench: error:")]
    assert rc == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert "bench.growth.sizes" in lines[0] and "1,000,000,000,000 documents" in lines[0], lines[0]
    assert not (tmp_path / "work").exists()  # the 500-document size was not built either
    assert not (out / "growth.json").exists()
