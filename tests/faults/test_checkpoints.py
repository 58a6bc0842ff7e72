"""Bad checkpoints (issue 12): a damaged training checkpoint or model folder is refused with an error
naming the file (a user error: one line at the CLI), and nothing in the folder changes."""

from __future__ import annotations

import pytest
import torch

from uniret.core.errors import CheckpointError, is_user_error
from uniret.training import ShuffledBatches, latest_checkpoint, train


def _cfg():
    from uniret.config.training import TrainConfig

    cfg = TrainConfig(lr=0.05, weight_decay=0.0, max_steps=6, batch_size=4, grad_accum=1, warmup_steps=1,
                      checkpoint_every=2, keep_checkpoints=3, log_every=1, seed=7, progress=False)
    cfg.validate()
    return cfg


def _source(cfg):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(16, 3, generator=gen)
    examples = list(zip(x, x.sum(-1), strict=True))

    def collate(batch):
        return {"x": torch.stack([e[0] for e in batch]), "y": torch.stack([e[1] for e in batch])}

    return ShuffledBatches(examples, cfg.batch_size, collate, seed=cfg.seed)


def _mse(model, batch, step):
    loss = ((model(batch["x"]).squeeze(-1) - batch["y"]) ** 2).mean()
    return loss, {"mse": loss.item()}


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "foreign pickle"])
def test_resume_from_a_damaged_checkpoint_is_refused_naming_it(tmp_path, damage, snapshot):
    cfg = _cfg()
    torch.manual_seed(0)
    train(torch.nn.Linear(3, 1), _source(cfg), _mse, cfg, tmp_path)
    latest = latest_checkpoint(tmp_path / "checkpoints")
    data = latest.read_bytes()
    latest.write_bytes({"truncated": data[: len(data) // 2], "garbage": b"\x00junk" * 100, "empty": b"",
                        "foreign pickle": b"\x80\x04K\x01."}[damage])
    before = snapshot(tmp_path)
    with pytest.raises(CheckpointError, match=latest.name) as info:
        train(torch.nn.Linear(3, 1), _source(cfg), _mse, cfg, tmp_path, resume=True)
    assert is_user_error(info.value) and len(str(info.value)) < 1000
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("damage", ["weights truncated", "config not json", "config missing"])
def test_a_damaged_model_folder_is_refused_naming_the_file(tmp_path, damage, snapshot):
    from uniret.config.models import ModelConfig
    from uniret.models.factory import META_FILE, WEIGHTS_FILE, build_model, load_model, save_model

    folder = save_model(build_model(ModelConfig(arch="unifier", backbone="splade-tiny", query_max_length=16,
                                                doc_max_length=32)), tmp_path / "model")
    if damage == "weights truncated":
        data = (folder / WEIGHTS_FILE).read_bytes()
        (folder / WEIGHTS_FILE).write_bytes(data[:1000])
        needle = WEIGHTS_FILE
    elif damage == "config not json":
        (folder / META_FILE).write_text('{"format": 1, "config": {"arch": "uni')
        needle = "invalid JSON"
    else:
        (folder / META_FILE).unlink()
        needle = META_FILE
    before = snapshot(tmp_path)
    with pytest.raises(Exception, match=needle) as info:
        load_model(folder)
    assert is_user_error(info.value), type(info.value)
    assert snapshot(tmp_path) == before
