"""Issue 57 item 7: `uniret gate-study add` keeps to its --root, refuses a string where a per-query
number belongs and refuses an existing name, each in one error line, exit 1, nothing written."""

from __future__ import annotations

import json

from uniret.cli import main


def _evaluated(folder, value=0.5):
    (folder / "per_query" / "hybrid_fast").mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps({"datasets": {"scifact": {}}}))
    rows = {"q1": {"ndcg@10": value}, "q2": {"ndcg@10": 0.25}}
    (folder / "per_query" / "hybrid_fast" / "scifact.json").write_text(json.dumps(rows))
    return folder


def _add(name, root, evaluated, capsys):
    rc = main(["gate-study", "add", name, "--kind", "equal", "--what", "a test", "--evaluated", str(evaluated),
               "--root", str(root)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("uniret gate-study: error:")]
    return rc, err, lines


def test_gate_study_add_refuses_a_name_outside_its_root(tmp_path, capsys, snapshot):
    root, evaluated = tmp_path / "a" / "b" / "study", _evaluated(tmp_path / "ev")
    for name in ("../../x", "../x", "..", ".hidden"):
        rc, err, lines = _add(name, root, evaluated, capsys)
        assert rc == 1 and len(lines) == 1 and "Traceback" not in err, err
        assert "not one folder name" in lines[0]
    assert not (tmp_path / "a" / "x").exists() and not (tmp_path / "x").exists() and not root.exists()


def test_gate_study_add_refuses_a_string_score(tmp_path, capsys):
    root, evaluated = tmp_path / "study", _evaluated(tmp_path / "ev", value="0.9")
    rc, err, lines = _add("seed-1", root, evaluated, capsys)
    assert rc == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert "scifact.json" in lines[0] and "q1.ndcg@10" in lines[0] and "finite number" in lines[0], lines[0]
    assert not root.exists()  # no orphan folder


def test_gate_study_run_refuses_a_string_in_a_committed_raw_file(tmp_path, repo_root, capsys):
    root = tmp_path / "study"
    assert _add("seed-1", root, _evaluated(tmp_path / "ev"), capsys)[0] == 0
    assert _add("seed-2", root, _evaluated(tmp_path / "ev2"), capsys)[0] == 0
    raw = root / "runs" / "seed-2" / "scifact.json"
    raw.write_text(json.dumps({"q1": "oops", "q2": 0.25}))
    rc = main(["gate-study", "run", "--root", str(root), "--params", str(repo_root / "params.yaml"),
               "--profile", "tiny", "--resamples", "50"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err, err
    assert str(raw) in err and "q1" in err


def test_gate_study_add_refuses_an_existing_name(tmp_path, capsys, snapshot):
    root = tmp_path / "study"
    assert _add("seed-1", root, _evaluated(tmp_path / "ev"), capsys)[0] == 0
    before = snapshot(root)
    rc, err, lines = _add("seed-1", root, _evaluated(tmp_path / "ev2", value=0.75), capsys)
    assert rc == 1 and len(lines) == 1 and "already exists" in lines[0], err
    assert snapshot(root) == before
