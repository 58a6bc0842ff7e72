"""CompositeLoss: named loss terms with weights (or weight schedules) -> total + per-term logs.

After sentence-transformers' losses-as-objects: each objective is its own module; a recipe's
stage objective is a dict {name: (loss, weight or schedule)}, e.g. UnifieR's continual stage

    {"contrastive_dense": (ContrastiveLoss("dense"), 1.0),
     "contrastive_lex":   (ContrastiveLoss("sparse"), 1.0),
     "agreement":         (AgreementLoss("dense", "sparse"), 1.0),
     "flops":             (FlopsLoss(...), (0.0024, QuadraticRamp(1000)))}
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from uniret.config.models import LossTermConfig
from uniret.losses.agreement import AgreementLoss
from uniret.losses.base import Loss, LossInputs
from uniret.losses.clear_margin import ClearMarginLoss
from uniret.losses.contrastive import ContrastiveLoss
from uniret.losses.distill_kl import DistillKLLoss
from uniret.losses.flops import FlopsLoss
from uniret.losses.margin_mse import MarginMSELoss
from uniret.losses.rank_consistency import RankConsistencyLoss
from uniret.losses.schedules import Schedule, build_schedule

Weight = float | tuple[float, Schedule]


class CompositeLoss(torch.nn.Module):
    """Weighted sum of named terms; `forward` returns (total, {name: unweighted value, name/weight: ...})."""

    def __init__(self, terms: Mapping[str, tuple[Loss, Weight]]):
        super().__init__()
        if not terms:
            raise ValueError("a composite loss needs at least one term")
        self.losses = torch.nn.ModuleDict({name: loss for name, (loss, _) in terms.items()})
        self.weights: dict[str, Weight] = {name: weight for name, (_, weight) in terms.items()}

    def weight_at(self, name: str, step: int) -> float:
        """The effective weight of term `name` at optimizer step `step`."""
        weight = self.weights[name]
        if isinstance(weight, tuple):
            base, schedule = weight
            return base * schedule(step)
        return float(weight)

    def forward(self, inputs: LossInputs) -> tuple[torch.Tensor, dict[str, float]]:  # type: ignore[override]
        total = None
        logs: dict[str, float] = {}
        for name, loss in self.losses.items():
            weight = self.weight_at(name, inputs.step)
            if weight == 0.0:
                logs[f"{name}/weight"] = 0.0
                continue  # e.g. a ramp at step 0: skip the (possibly costly) term
            value = loss(inputs)
            logs[name] = float(value.detach())
            logs[f"{name}/weight"] = weight
            total = weight * value if total is None else total + weight * value
        if total is None:
            raise ValueError(f"every loss term has weight 0 at step {inputs.step}")
        logs["total"] = float(total.detach())
        return total, logs


def build_term(cfg: LossTermConfig) -> Loss:
    """The Loss object of one configured term."""
    if cfg.loss == "contrastive":
        return ContrastiveLoss(cfg.channel, cfg.temperature, cfg.in_batch, cfg.bm25_residual)
    if cfg.loss == "flops":
        return FlopsLoss(cfg.query_weight, cfg.doc_weight)
    if cfg.loss == "agreement":
        return AgreementLoss(cfg.channel, cfg.other_channel, cfg.temperature, cfg.stop_gradient)
    if cfg.loss == "rank_consistency":
        return RankConsistencyLoss(cfg.channel, cfg.teacher or "lexical")
    if cfg.loss == "clear_margin":
        return ClearMarginLoss(cfg.channel, cfg.xi, cfg.lambda_train)
    if cfg.loss == "distill_kl":
        return DistillKLLoss(cfg.channel, cfg.temperature, cfg.teacher or "reranker", cfg.teacher_temperature)
    if cfg.loss == "margin_mse":
        return MarginMSELoss(cfg.channel, cfg.teacher or "reranker")
    raise ValueError(f"unknown loss {cfg.loss!r}")


def build_composite(terms: Mapping[str, LossTermConfig]) -> CompositeLoss:
    """A CompositeLoss from configured terms (e.g. `LossSection.terms(recipe, stage)`)."""
    built: dict[str, tuple[Loss, Weight]] = {}
    for name, cfg in terms.items():
        weight: Weight = cfg.weight
        if cfg.schedule.kind != "constant":
            weight = (cfg.weight, build_schedule(cfg.schedule))
        built[name] = (build_term(cfg), weight)
    return CompositeLoss(built)


_DEFAULT_TEACHER = {"rank_consistency": "lexical", "distill_kl": "reranker", "margin_mse": "reranker"}


def needs(terms: Mapping[str, LossTermConfig]) -> set[str]:
    """External inputs the terms need: teacher names ("reranker", "lexical"), "bm25", and "idf" (the
    corpus IDF table of the inference-free sparse queries, channel sparse_idf)."""
    out = set()
    for cfg in terms.values():
        if "sparse_idf" in (cfg.channel, cfg.other_channel if cfg.loss == "agreement" else None):
            out.add("idf")
        if cfg.loss in _DEFAULT_TEACHER:
            out.add(cfg.teacher or _DEFAULT_TEACHER[cfg.loss])
        if cfg.loss == "clear_margin" or (cfg.loss == "contrastive" and cfg.bm25_residual > 0):
            out.add("bm25")
    return out
