"""Typed config of the training stages (`training` section): which stages each recipe runs,
how each stage trains, how negatives are mined, and how trained / zero-shot models are evaluated.

The active recipe is `model.recipe`; its plan (the `stages`, `mine_channels`, ... keys of
recipes/<name>.yaml, attached as `training.recipes.<name>` by config.recipe_files) says which of
the training stages that recipe runs and where its negatives come from. A stage outside the list still runs and writes a manifest that
says "skipped by recipe <name>", so the DAG keeps its shape.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from uniret.config.loader import build
from uniret.config.models import ModelConfig
from uniret.config.modes import EVAL_MODES
from uniret.config.training import Amp, TrainConfig

TRAINING_STAGES = ("warmup", "mine", "reranker", "continual", "distill")


@dataclass
class RecipePlan:
    """What one recipe runs: its stages (a subset of TRAINING_STAGES) and where negatives come from."""

    stages: list[str] = field(default_factory=lambda: list(TRAINING_STAGES))
    # which heads mine hard negatives: dense -> N_den, sparse -> N_lex (UnifieR Eq. 8)
    mine_channels: list[str] = field(default_factory=lambda: ["dense", "sparse"])
    # who mines N_lex: the trained model's sparse head, or LED's frozen lexical teacher
    lexical_miner: Literal["model", "teacher"] = "model"
    # evaluate: the modes of this recipe's final model, reported as "<recipe>/<mode>"
    eval_modes: list[str] = field(default_factory=lambda: ["dense", "lexical", "uni", "hybrid"])
    # the bundle mode this recipe's models are served and gated in (gate.candidate_system: null)
    serve_mode: str = "uni"
    # per-stage overrides of training.<stage>.train for this recipe, e.g. {warmup: {max_steps: 100,
    # lr: 2.0e-5}}: a 6-layer MiniLM step costs several SPLADE-tiny steps on a CPU, and a pretrained
    # retriever is fine-tuned gently. warmup_steps scale with max_steps unless given.
    train: dict[str, dict[str, Any]] = field(default_factory=dict)
    # per-stage training document length for this recipe, overriding training.<stage>.doc_max_length
    # (e.g. {continual: 256}: one stage trains at the length the index encodes; why not by default: E30)
    train_doc_length: dict[str, int] = field(default_factory=dict)

    def validate(self) -> None:
        bad = [s for s in self.stages if s not in TRAINING_STAGES]
        if bad:
            raise ValueError(f"stages: unknown stage(s) {bad}; known: {list(TRAINING_STAGES)}")
        if "warmup" not in self.stages:
            raise ValueError("stages: every recipe trains a warmup model (later stages start from it)")
        for later in ("continual", "distill", "reranker"):
            if later in self.stages and "mine" not in self.stages:
                raise ValueError(f"stages: {later} trains on mined negatives; add mine")
        if "distill" in self.stages and "reranker" not in self.stages:
            raise ValueError("stages: distill needs the reranker teacher; add reranker")
        bad = [c for c in self.mine_channels if c not in ("dense", "sparse")]
        if bad or not self.mine_channels:
            raise ValueError(f"mine_channels: choose from dense, sparse (got {self.mine_channels})")
        bad = sorted(set(self.train) - {"warmup", "reranker", "continual", "distill"})
        if bad:
            raise ValueError(f"train: overrides name training stages (warmup, reranker, continual, distill), got {bad}")
        bad = sorted(set(self.train_doc_length) - {"warmup", "reranker", "continual", "distill"})
        if bad:
            raise ValueError(f"train_doc_length: keys name training stages (warmup, reranker, continual, distill), got {bad}")
        bad = {s: n for s, n in self.train_doc_length.items() if not isinstance(n, int) or isinstance(n, bool) or n < 1}
        if bad:
            raise ValueError(f"train_doc_length: lengths must be integers >= 1, got {bad}")
        if self.serve_mode not in EVAL_MODES:
            raise ValueError(f"serve_mode: unknown mode {self.serve_mode!r}; known: {list(EVAL_MODES)}")
        bad = [m for m in self.eval_modes if m not in EVAL_MODES]
        if bad:
            raise ValueError(f"eval_modes: unknown mode(s) {bad}; known: {list(EVAL_MODES)}")


CLICK_SOURCES = ("ips", "naive", "none")


@dataclass
class ClickMixConfig:
    """The feedback stage's click positives mixed into a bi-encoder stage's examples (the transformer
    learning from serving's traffic; docs/learning-loop.md, "Training on it")."""

    source: str = "none"  # ips: IPS-weighted clicks, naive: weight 1 each, none: no clicks
    # share of the stage's examples drawn from the clicks: (query text, clicked doc) resampled with
    # probability proportional to their weight, so the loss needs no per-example weight
    share: float = 0.5
    labels: bool = True  # the labelled examples too; false: clicks only (the loop's click arms never read labels)
    aggregate: str = "sum"  # one (query text, doc)'s clicks: summed, or over the times it was shown (E72)

    def validate(self) -> None:
        if self.source not in CLICK_SOURCES:
            raise ValueError(f"source must be one of {', '.join(CLICK_SOURCES)}, got {self.source!r}")
        if self.labels and not 0.0 < self.share < 1.0:
            raise ValueError(f"share must be in (0, 1) when labels are mixed in, got {self.share}")
        if self.aggregate not in ("sum", "rate"):
            raise ValueError(f"aggregate must be sum or rate, got {self.aggregate!r}")


@dataclass(kw_only=True)
class StageTrainingConfig:
    """One training stage: loop settings, training-group shape and text lengths."""

    train: TrainConfig
    group_size: int = 4  # documents per query in a batch: the positive + group_size - 1 negatives
    resume: bool = True  # continue from artifacts/.train/<stage> checkpoints after a crash
    max_queries: int | None = None  # cap on training queries (None: all)
    # documents cut at this many tokens while training (None: the model's doc_max_length); the
    # model still encodes corpora at its own length: a CPU budget buys more steps with short docs
    doc_max_length: int | None = None
    # loss terms taught by the reranker are dropped (logged, recorded in the manifest) when the
    # reranker stage's final top-1 accuracy on its training groups is below this: distilling from a
    # teacher that ranks no better than chance only pulls the heads toward noise. None: always keep
    min_teacher_top1: float | None  # per stage in params.yaml (distill: 0.5, the others null)
    # where to start instead of the earlier stage's model: "production" (the checkpoint published with the
    # registry's production bundle: a nightly that continues what it serves) or a checkpoint folder; null: the earlier stage's
    start_model: str | None = None
    clicks: ClickMixConfig = field(default_factory=ClickMixConfig)

    def validate(self) -> None:
        if self.doc_max_length is not None and self.doc_max_length < 1:
            raise ValueError(f"doc_max_length must be >= 1 or null, got {self.doc_max_length}")
        if self.min_teacher_top1 is not None and not 0.0 <= self.min_teacher_top1 <= 1.0:
            raise ValueError(f"min_teacher_top1 must be in [0, 1] or null, got {self.min_teacher_top1}")
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2 (a positive and a negative), got {self.group_size}")
        if self.max_queries is not None and self.max_queries < 1:
            raise ValueError(f"max_queries must be >= 1 or null, got {self.max_queries}")


def with_train_override(cfg: StageTrainingConfig, override: dict[str, Any], where: str) -> StageTrainingConfig:
    """`cfg` with a recipe's overrides of its `train` block (RecipePlan.train); warmup_steps and
    checkpoint_every follow a shorter max_steps unless given. Wrong keys or types name `where`."""
    if not override:
        return cfg
    if not isinstance(override, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(override).__name__}")
    override = dict(override)
    t = cfg.train
    if isinstance(override.get("max_steps"), int):
        if "warmup_steps" not in override:
            override["warmup_steps"] = round(t.warmup_steps * override["max_steps"] / t.max_steps)
        if "checkpoint_every" not in override:
            override["checkpoint_every"] = min(t.checkpoint_every, override["max_steps"])
    values = {**{f.name: getattr(t, f.name) for f in dataclasses.fields(t)}, **override}
    return dataclasses.replace(cfg, train=build(type(t), values, where))


@dataclass
class MineConfig:
    """Self-mined hard negatives (UnifieR Eq. 8): top-K per head, sampled from a rank window."""

    depth: int = 100  # top-K retrieved per head and query
    window_start: int = 3  # negatives come from ranks [window_start, window_end) (0-based, positives dropped)
    window_end: int = 50
    per_channel: int = 8  # |N_den| and |N_lex| per query
    # drop a candidate whose score (same head) reaches ratio * the weakest positive's score: a likely
    # unjudged relevant document (false negative). null keeps every candidate.
    false_negative_ratio: float | None = None
    seed: int = 7
    max_queries: int | None = None  # cap on mined training queries (None: all)
    # the corpus is encoded for mining with documents cut at this many tokens (None: the model's
    # doc_max_length): negatives need a good ranking, not the best one, and encoding dominates
    doc_max_length: int | None = None
    # autocast of the mining pass (config.training.Amp): "native" encodes in bf16 where the CPU
    # multiplies bf16 natively (about 2x faster on 2 cores), "off" in fp32 (why off: E18)
    amp: Amp = "off"
    # what runs the mining pass: "onnx", the warm-up model's fp32 graphs exported for it and checked
    # against torch (index.export.parity), 2.2x faster on 2 CPU cores (why: E105); "torch" (a GPU)
    encoder: Literal["onnx", "torch"] = "onnx"

    def validate(self) -> None:
        if self.encoder == "onnx" and self.amp != "off":
            raise ValueError(f"amp {self.amp!r} needs encoder: torch (the ONNX graphs run in fp32)")
        if self.doc_max_length is not None and self.doc_max_length < 1:
            raise ValueError(f"doc_max_length must be >= 1 or null, got {self.doc_max_length}")
        if not 0 <= self.window_start < self.window_end <= self.depth:
            raise ValueError(
                f"need 0 <= window_start ({self.window_start}) < window_end ({self.window_end}) <= depth ({self.depth})"
            )
        if self.per_channel < 1:
            raise ValueError(f"per_channel must be >= 1, got {self.per_channel}")
        if self.false_negative_ratio is not None and self.false_negative_ratio <= 0:
            raise ValueError(f"false_negative_ratio must be > 0 or null, got {self.false_negative_ratio}")


@dataclass
class ModelEvalConfig:
    """Evaluation of trained heads and of the untrained starting models (in-memory exact search)."""

    # untrained starting points, reported as "zeroshot-<name>/<mode>"
    zeroshot: dict[str, ModelConfig] = field(default_factory=dict)
    zeroshot_modes: dict[str, list[str]] = field(default_factory=dict)
    # CLEAR: docs taken from each of the BM25 and embedding runs before Eq. 5 interpolation
    clear_depth: int = 1000

    def validate(self) -> None:
        unknown = sorted(set(self.zeroshot_modes) - set(self.zeroshot))
        if unknown:
            raise ValueError(f"zeroshot_modes: {unknown} not defined under zeroshot")
        if self.clear_depth < 1:
            raise ValueError("clear_depth must be >= 1")


@dataclass(kw_only=True)
class TrainingSection:
    """The `training` section: recipe plans, one config per training stage, model evaluation."""

    recipes: dict[str, RecipePlan] = field(default_factory=dict)
    warmup: StageTrainingConfig
    mine: MineConfig = field(default_factory=MineConfig)
    reranker: StageTrainingConfig
    continual: StageTrainingConfig
    distill: StageTrainingConfig
    evaluation: ModelEvalConfig = field(default_factory=ModelEvalConfig)

    def validate(self) -> None:
        # a recipe's train overrides are checked with the section (params check), not at stage time only
        for name, plan in self.recipes.items():
            for stage, override in plan.train.items():
                with_train_override(getattr(self, stage), override, f"recipes.{name}.train.{stage}")

    def plan(self, recipe: str) -> RecipePlan:
        """The RecipePlan of `recipe`; KeyError names the known ones."""
        if recipe not in self.recipes:
            raise KeyError(f"training.recipes: no plan for recipe {recipe!r}; known: {sorted(self.recipes)}")
        return self.recipes[recipe]
