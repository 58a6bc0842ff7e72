"""Profile overrides: deep merge, `_replace: true`, and no partial configs conjured from defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from uniret.config.loader import ConfigError
from uniret.config.params import Params

REPO = Path(__file__).resolve().parents[2]


def _params(raw: dict, profile: str) -> Params:
    return Params(raw=raw, profile=profile)


def _stages() -> dict:
    """The repo's training stages (params.yaml gives their loop settings; the dataclasses have no default)."""
    training = yaml.safe_load((REPO / "params.yaml").read_text())["training"]
    return {s: training[s] for s in ("warmup", "reranker", "continual", "distill")}


def test_profile_adding_a_partial_model_config_is_refused():
    # The shape that once evaluated a default UnifieR under the name "minilm": the base defines no
    # zero-shot model and the profile gives one only a length.
    raw = {"training": {"evaluation": {"zeroshot": {}},
                        "profiles": {"cpu": {"evaluation": {"zeroshot": {"minilm": {"doc_max_length": 128}}}}}}}
    with pytest.raises(ConfigError, match=r"zeroshot\.minilm: the profile adds an entry"):
        _params(raw, "cpu").section("training")


def test_profile_overrides_an_entry_the_base_defines():
    minilm = {"arch": "dense", "backbone": "minilm", "pooling": "mean", "doc_max_length": 256}
    raw = {"training": {**_stages(), "evaluation": {"zeroshot": {"minilm": minilm}},
                        "profiles": {"cpu": {"evaluation": {"zeroshot": {"minilm": {"doc_max_length": 128}}}}}}}
    cfg = _params(raw, "cpu").section("training").evaluation.zeroshot["minilm"]
    assert (cfg.arch, cfg.backbone, cfg.pooling, cfg.doc_max_length) == ("dense", "minilm", "mean", 128)


def test_replace_marker_clears_or_replaces_a_mapping():
    raw = {"gate": {"min_score_per_dataset": {"scifact": 0.5, "nfcorpus": 0.25},
                    "profiles": {"tiny": {"min_score_per_dataset": {"_replace": True}},
                                 "other": {"min_score_per_dataset": {"_replace": True, "npl": 0.3}}}}}
    assert _params(raw, "tiny").section("gate").min_score_per_dataset == {}
    assert _params(raw, "other").section("gate").min_score_per_dataset == {"npl": 0.3}
    assert _params(raw, "cpu").section("gate").min_score_per_dataset == {"scifact": 0.5, "nfcorpus": 0.25}


def test_plain_mappings_may_gain_keys():
    # min_score_per_dataset is dict[str, float]: new datasets are values, not partial configs
    raw = {"gate": {"min_score_per_dataset": {"scifact": 0.5},
                    "profiles": {"tiny": {"min_score_per_dataset": {"npl": 0.0}}}}}
    assert _params(raw, "tiny").section("gate").min_score_per_dataset == {"scifact": 0.5, "npl": 0.0}
