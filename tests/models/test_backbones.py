"""Backbones resolve and load offline, with or without their MLM head."""

from __future__ import annotations

from pathlib import Path

import pytest

from uniret.models.backbones import BackboneError, load_backbone, load_tokenizer, resolve_backbone


@pytest.mark.parametrize("alias", ["minilm", "splade-tiny"])
def test_aliases_resolve_to_installed_folders(alias):
    folder = Path(resolve_backbone(alias))
    assert (folder / "config.json").is_file()
    tok = load_tokenizer(alias)
    assert tok("hello world")["input_ids"][0] == tok.cls_token_id


def test_splade_tiny_has_a_tied_mlm_head():
    mlm = load_backbone("splade-tiny", with_mlm_head=True)
    assert mlm.config.num_hidden_layers == 2 and mlm.config.hidden_size == 128
    assert mlm.cls.predictions.decoder.weight is mlm.bert.embeddings.word_embeddings.weight


def test_minilm_loads_without_head_and_local_folder_works():
    model = load_backbone("minilm", with_mlm_head=False)
    assert model.config.hidden_size == 384 and model.config.num_hidden_layers == 6
    again = load_backbone(resolve_backbone("minilm"), with_mlm_head=False)  # a folder path works too
    assert again.config.to_dict()["hidden_size"] == 384


def test_unknown_backbone_is_a_clear_error(tmp_path):
    with pytest.raises(BackboneError, match="no-such-model"):
        load_backbone("no-such-model", with_mlm_head=False)
    with pytest.raises(BackboneError, match="no config.json"):
        resolve_backbone(str(tmp_path))
