"""lab/gate_candidates.py: the overrides it writes into a candidate's params and recipe copies, and the
shuffled positives of a made-worse candidate."""

from __future__ import annotations

import json

import pytest
import yaml


@pytest.fixture(scope="module")
def lab(lab_script):
    return lab_script("gate_candidates")


def test_overrides_land_in_the_copies_and_the_project_files_stay(lab, repo_root, tmp_path):
    before = (repo_root / "params.yaml").read_bytes()
    params = lab.write_config(tmp_path, repo_root / "params.yaml", ["training.continual.train.seed=3",
                                                                    "retrieval.lexical.top_n=16"],
                              ["profiles.cpu.train.continual.max_steps=80"])
    doc = yaml.safe_load(params.read_text())
    assert doc["training"]["continual"]["train"]["seed"] == 3 and doc["retrieval"]["lexical"]["top_n"] == 16
    assert doc["retrieval"]["modes"] == lab.STUDY_MODES and doc["evaluate"]["expected_scores"] == []
    recipe = yaml.safe_load((tmp_path / "recipes" / f"{doc['model']['recipe']}.yaml").read_text())
    assert recipe["profiles"]["cpu"]["train"]["continual"] == {"max_steps": 80, "amp": "native"}
    assert (repo_root / "params.yaml").read_bytes() == before

    from uniret.config.params import load_params

    loaded = load_params(params, "cpu")  # the copy is a valid params file, recipes found beside it
    assert loaded.section("retrieval").lexical.top_n == 16
    with pytest.raises(SystemExit, match="expected KEY=VALUE"):
        lab.parse_sets(["no-equals-sign"])


def test_shuffled_positives_replace_a_fraction_of_the_groups(lab, tmp_path):
    source = tmp_path / "mine"
    source.mkdir()
    rows = [{"query_id": str(i), "positives": [f"p{i}"], "negatives": [f"n{i}-{j}" for j in range(5)]}
            for i in range(50)]
    (source / "negatives.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (source / "manifest.json").write_text("{}")
    assert lab.shuffle_positives(source, tmp_path / "out", 0.4, seed=11) == 20
    shuffled = [json.loads(line) for line in (tmp_path / "out" / "negatives.jsonl").read_text().splitlines()]
    changed = [r for r, old in zip(shuffled, rows, strict=True) if r["positives"] != old["positives"]]
    assert len(changed) == 20 and all(len(r["positives"]) == 1 for r in shuffled)
    assert all(r["positives"][0] not in r["negatives"] for r in shuffled)
    assert (source / "negatives.jsonl").read_text().count("\n") == 50  # the source is left alone
