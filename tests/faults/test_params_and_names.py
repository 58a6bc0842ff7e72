"""Findings 1, 2 and part of 6 of issue 12: dataset names that are paths, unknown profiles, a
wrong base type hidden by a profile override; each refused with a message naming the key, a
non-zero exit, and nothing written or changed."""

from __future__ import annotations

import pytest


def _common(params, data, artifacts):
    return ["--params", str(params), "--profile", "tiny", "--data", str(data), "--artifacts", str(artifacts)]


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "separator"])
def test_dataset_name_that_is_a_path_is_refused_and_the_source_is_untouched(kind, tmp_path, small_data, params_file,
                                                                             cli, snapshot):
    name = {"absolute": str(small_data / "nfcorpus"), "dotdot": "../data/nfcorpus", "separator": "x/nfcorpus"}[kind]
    params = params_file(lambda raw: raw["data"].update(eval_datasets=["scifact", name]))
    before = snapshot(tmp_path)
    r = cli("validate", *_common(params, small_data, tmp_path / "artifacts"))
    assert r.returncode == 1, r.stderr
    assert "data: eval_datasets[1]: dataset name" in r.stderr and "plain folder name" in r.stderr, r.stderr
    assert snapshot(tmp_path) == before  # neither the source corpus nor artifacts changed


def test_train_dataset_with_a_separator_is_refused(tmp_path, small_data, params_file, cli):
    params = params_file(lambda raw: raw["data"].update(train_dataset="/etc"))
    r = cli("params", "check", "--params", str(params), "--profile", "tiny")
    assert r.returncode == 1 and "train_dataset" in r.stderr, r.stderr


def test_a_stage_refuses_artifacts_inside_its_inputs(tmp_path, small_data, params_file, cli, snapshot):
    params = params_file()
    before = snapshot(small_data)
    r = cli("validate", *_common(params, small_data, small_data / "scifact" / "artifacts"))
    # inside the data root: refused before any work (issue 43), before the input-overlap rule below
    assert r.returncode == 1 and "refusing to write inside the data root" in r.stderr, r.stderr
    assert snapshot(small_data) == before and not (small_data / "scifact" / "artifacts" / "validate").exists()
    # the rule for any other input a stage reads (a stage output inside another's input folder)
    from uniret.core.errors import StageFailed
    from uniret.runtime import check_outputs_outside_inputs

    inputs = {"upstream": tmp_path / "upstream"}
    with pytest.raises(StageFailed, match="overlaps its input 'upstream'"):
        check_outputs_outside_inputs("bm25", [tmp_path / "upstream" / "bm25"], inputs)
    check_outputs_outside_inputs("bm25", [tmp_path / "elsewhere" / "bm25"], inputs)


@pytest.mark.parametrize("command", [["params", "check"], ["validate"], ["nightly"]])
def test_unknown_profile_exits_non_zero_naming_the_known_ones(command, tmp_path, small_data, params_file, cli,
                                                             snapshot):
    params = params_file()
    args = [*command, "--params", str(params), "--profile", "tyni"]
    if command != ["params", "check"]:
        args += ["--data", str(small_data), "--artifacts", str(tmp_path / "artifacts")]
    before = snapshot(tmp_path)
    r = cli(*args)
    assert r.returncode == 1, r.stderr
    assert "unknown profile 'tyni'" in r.stderr and "known profiles: cpu, gpu, tiny" in r.stderr, r.stderr
    assert snapshot(tmp_path) == before


def test_wrong_base_type_is_caught_even_when_the_active_profile_overrides_it(params_file, cli):
    params = params_file(lambda raw: raw["retrieval"].update(k="5"))  # the tiny profile overrides retrieval.k
    r = cli("params", "check", "--params", str(params), "--profile", "tiny")
    assert r.returncode == 1 and "retrieval.k: expected an integer, got str '5'" in r.stderr, r.stderr


@pytest.mark.parametrize("value", ["5", True])
def test_params_int_is_not_coerced(value, params_file, cli):
    params = params_file(lambda raw: raw["bench"].update(k=value))
    r = cli("params", "check", "--params", str(params), "--profile", "tiny")
    assert r.returncode == 1 and "bench.k: expected an integer" in r.stderr, r.stderr
