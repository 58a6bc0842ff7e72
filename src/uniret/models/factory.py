"""Build models from a ModelConfig; save and reload self-describing checkpoint folders.

A checkpoint folder holds everything needed to rebuild the model without the original backbone:

    uniret_model.json   {"format": 1, "config": ModelConfig fields}
    backbone/           the transformer's config.json (architecture only)
    lexicon_backbone/   arch "pair" only: the lexicon module's config.json
    weights.pt          the model's state_dict
    tokenizer/          the tokenizer files

It is written to a temp folder beside the target and renamed into place, so a crash never leaves
a half-written checkpoint under the real name.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from pathlib import Path

import torch
from transformers import PretrainedConfig, PreTrainedModel

from uniret.config.loader import build
from uniret.config.models import ModelConfig
from uniret.models.aggretriever import AggretrieverEncoder
from uniret.models.backbones import BackboneError, load_tokenizer
from uniret.models.dense import DenseEncoder, marker_id
from uniret.models.pair import PairEncoder, same_vocabulary
from uniret.models.reranker import CrossEncoderReranker
from uniret.models.splade import SpladeEncoder
from uniret.models.unifier import UnifierEncoder
from uniret.utils.files import make_temp_dir
from uniret.utils.text import excerpt

log = logging.getLogger("uniret.models")

META_FILE = "uniret_model.json"
WEIGHTS_FILE = "weights.pt"
LEXICON_BACKBONE_DIR = "lexicon_backbone"  # arch "pair": the second transformer's config
FORMAT_VERSION = 1


def _construct(cfg: ModelConfig, tokenizer, backbone: str, pretrained: bool, lexicon_backbone: str | None = None
               ) -> torch.nn.Module:
    common = {"dropout": cfg.dropout, "pretrained": pretrained}
    if cfg.arch == "pair":
        dense_cfg = dataclasses.replace(cfg, arch="dense")
        return PairEncoder(_construct(dense_cfg, tokenizer, backbone, pretrained),
                           SpladeEncoder(lexicon_backbone or cfg.lexicon_backbone, **common))
    if cfg.arch == "unifier":
        return UnifierEncoder(
            backbone, cfg.shared_layers, cfg.dense_layers, cfg.lexicon_layers, cfg.gating, **common
        )
    if cfg.arch == "aggretriever":
        return AggretrieverEncoder(backbone, cfg.cls_dim, cfg.agg_dim, cfg.slice_seed, **common)
    if cfg.arch == "dense":
        return DenseEncoder(
            backbone,
            cfg.pooling,
            cfg.normalize,
            marker_id(tokenizer, cfg.query_marker),
            marker_id(tokenizer, cfg.doc_marker),
            query_scale=cfg.query_scale,
            **common,
        )
    if cfg.arch == "splade":
        return SpladeEncoder(backbone, **common)
    if cfg.arch == "reranker":
        return CrossEncoderReranker(backbone, cfg.max_length, tokenizer, **common)
    raise ValueError(f"unknown arch {cfg.arch!r}")


def _attach(model: torch.nn.Module, cfg: ModelConfig, tokenizer) -> torch.nn.Module:
    model.model_config = cfg
    model.tokenizer = tokenizer
    return model


def build_model(cfg: ModelConfig) -> torch.nn.Module:
    """A fresh model of `cfg` from its pretrained backbone (offline).

    The returned module carries `.model_config` (cfg) and `.tokenizer`. Encoders implement
    RetrievalEncoder; arch "reranker" is a CrossEncoderReranker.
    """
    tokenizer = load_tokenizer(cfg.backbone)
    if cfg.arch == "pair" and not same_vocabulary(tokenizer, load_tokenizer(cfg.lexicon_backbone)):
        raise BackboneError(
            f"pair: backbone {cfg.backbone!r} and lexicon_backbone {cfg.lexicon_backbone!r} tokenize differently; "
            "the pair feeds both from one tokenizer"
        )
    model = _construct(cfg, tokenizer, cfg.backbone, pretrained=True)
    return _attach(model, cfg, tokenizer)


def _hf_config(model: torch.nn.Module) -> PretrainedConfig:
    config = getattr(model, "config", None)
    if isinstance(config, PretrainedConfig):
        return config
    for module in model.modules():
        if isinstance(module, PreTrainedModel):
            return module.config
    raise ValueError(f"{type(model).__name__}: no transformer config found to save")


def save_model(model: torch.nn.Module, directory: str | os.PathLike) -> Path:
    """Write `model` (built by build_model/load_model) as a checkpoint folder, atomically."""
    cfg = getattr(model, "model_config", None)
    tokenizer = getattr(model, "tokenizer", None)
    if cfg is None or tokenizer is None:
        raise ValueError("save_model needs a model from build_model/load_model (model_config and tokenizer)")
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(directory.parent, f".{directory.name}.")
    try:
        meta = {"format": FORMAT_VERSION, "config": dataclasses.asdict(cfg)}
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _hf_config(model).save_pretrained(tmp / "backbone")
        if isinstance(model, PairEncoder):
            _hf_config(model.lexicon).save_pretrained(tmp / LEXICON_BACKBONE_DIR)
        tokenizer.save_pretrained(tmp / "tokenizer")
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        torch.save(state, tmp / WEIGHTS_FILE)
        if directory.exists():
            old = directory.with_name(f".{directory.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(directory, old)
            os.replace(tmp, directory)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("saved %s model -> %s", cfg.arch, directory)
    return directory


def read_model_config(directory: str | os.PathLike) -> ModelConfig:
    """The ModelConfig stored in a checkpoint folder."""
    path = Path(directory) / META_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{directory}: not a uniret model checkpoint (no {META_FILE})")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        from uniret.core.errors import CheckpointError

        raise CheckpointError(f"{path}: invalid JSON: {exc}") from exc
    if meta.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: checkpoint format {meta.get('format')!r}, expected {FORMAT_VERSION}")
    return build(ModelConfig, meta["config"], str(path))


def load_model(directory: str | os.PathLike, device: str | torch.device | None = None):
    """(model, tokenizer) from a checkpoint folder written by save_model; the model is in eval mode."""
    directory = Path(directory)
    cfg = read_model_config(directory)
    tokenizer = load_tokenizer(str(directory / "tokenizer"))
    model = _construct(cfg, tokenizer, str(directory / "backbone"), pretrained=False,
                       lexicon_backbone=str(directory / LEXICON_BACKBONE_DIR))
    try:
        state = torch.load(directory / WEIGHTS_FILE, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    except Exception as exc:  # truncated, foreign or mismatched weights: name the file
        from uniret.core.errors import CheckpointError

        raise CheckpointError(f"{directory / WEIGHTS_FILE}: cannot load the model weights "
                              f"({type(exc).__name__}: {excerpt(str(exc))})") from exc
    _attach(model, cfg, tokenizer)
    model.eval()
    if device is not None:
        model.to(device)
    return model, tokenizer
