"""Typed config of the models (`model` section) and of the training objectives (`losses` section).

A *recipe* (hybrid, unifier, led, clear, aggretriever: one file each under recipes/, see
config.recipe_files) names the network trained by the DAG, the frozen teacher it learns from (LED),
and, per training stage, the weighted loss terms of its objective.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ARCHS = ("pair", "unifier", "aggretriever", "dense", "splade", "reranker")
LOSSES = ("contrastive", "flops", "agreement", "rank_consistency", "clear_margin", "distill_kl", "margin_mse")


@dataclass
class ModelConfig:
    """One network: its architecture, backbone and architecture-specific shape.

    Fields that an architecture does not use are ignored by it (validate() checks the used ones).
    """

    arch: Literal["pair", "unifier", "aggretriever", "dense", "splade", "reranker"] = "unifier"
    backbone: str = "splade-tiny"  # "splade-tiny", "minilm", a local folder or an (offline-cached) HF name
    # pair: the lexicon module's masked-LM backbone (`backbone` is the dense module's); both must
    # share one vocabulary, since one tokenizer feeds both
    lexicon_backbone: str = "splade-tiny"
    query_max_length: int = 64
    doc_max_length: int = 256
    max_length: int = 320  # reranker: query + document pair
    # dense bi-encoder (LED student, CLEAR embedding model)
    pooling: Literal["cls", "mean"] = "cls"
    normalize: bool = False
    # with normalize: query vectors times this, so scores are scale * cosine (CLEAR adds them to BM25
    # scores: a pretrained cosine model keeps its geometry and still spans BM25's score range)
    query_scale: float | None = None
    # CLEAR replaces [CLS] by [QRY] / [DOC] markers; BERT vocabularies reserve [unusedN] tokens for that
    query_marker: str | None = None
    doc_marker: str | None = None
    # UnifieR layer split (theta_ctx / theta_den / theta_mlm); None: half and half of the backbone
    shared_layers: int | None = None
    dense_layers: int | None = None
    lexicon_layers: int = 1  # initialised from the backbone's top layers
    gating: bool = False  # query-side gate between the lexicon and dense channels (UnifieR 4.4)
    # Aggretriever: [CLS] projected to cls_dim, agg* slice-max-pooled to agg_dim
    cls_dim: int = 128
    agg_dim: int = 640
    slice_seed: int = 0  # seed of the random vocabulary-to-slice assignment
    dropout: float | None = None  # None keeps the backbone's dropout

    def validate(self) -> None:
        for name in ("query_max_length", "doc_max_length", "max_length", "lexicon_layers", "cls_dim", "agg_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("shared_layers", "dense_layers"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or null, got {value}")
        if self.agg_dim % 2:
            raise ValueError(f"agg_dim must be even (each slice splits into S+ and S-), got {self.agg_dim}")
        if self.dropout is not None and not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.query_scale is not None and self.query_scale <= 0:
            raise ValueError(f"query_scale must be > 0 or null, got {self.query_scale}")


@dataclass
class RecipeConfig:
    """What a recipe trains: the model, an optional frozen teacher, and test-time interpolation."""

    model: ModelConfig = field(default_factory=ModelConfig)
    # LED: the frozen lexical teacher. null uses the lexicon channel of `teacher_from_stage`'s model.
    teacher: ModelConfig | None = None
    teacher_from_stage: str | None = None  # e.g. "warmup": the checkpoint of an earlier stage
    # CLEAR (DualRM Eq. 5): s = bm25_weight * s_lex + s_emb at test time (lambda_test)
    bm25_weight: float | None = None

    def validate(self) -> None:
        if self.bm25_weight is not None and self.bm25_weight < 0:
            raise ValueError(f"bm25_weight must be >= 0, got {self.bm25_weight}")


@dataclass
class ModelSection:
    """The `model` section: the active recipe, every recipe's networks, and the reranker teacher."""

    recipe: str = "hybrid"  # the name of a recipes/<name>.yaml
    recipes: dict[str, RecipeConfig] = field(default_factory=dict)  # filled from the recipe files
    reranker: ModelConfig = field(default_factory=lambda: ModelConfig(arch="reranker", backbone="minilm"))

    def validate(self) -> None:
        if self.recipe not in self.recipes:
            raise ValueError(f"recipe {self.recipe!r}: no recipes/{self.recipe}.yaml; known: {sorted(self.recipes)}")
        if self.reranker.arch != "reranker":
            raise ValueError(f"reranker.arch must be 'reranker', got {self.reranker.arch!r}")

    def active(self) -> RecipeConfig:
        """The RecipeConfig of the active recipe."""
        return self.recipes[self.recipe]


@dataclass
class ScheduleConfig:
    """A loss-weight schedule: multiplier of the term's weight as a function of the optimizer step."""

    kind: Literal["constant", "linear", "quadratic"] = "constant"
    ramp_steps: int = 0  # steps to reach the full weight (linear / quadratic)

    def validate(self) -> None:
        if self.ramp_steps < 0:
            raise ValueError(f"ramp_steps must be >= 0, got {self.ramp_steps}")


@dataclass
class LossTermConfig:
    """One weighted term of an objective. Options a loss does not use are ignored by it."""

    loss: Literal[
        "contrastive", "flops", "agreement", "rank_consistency", "clear_margin", "distill_kl", "margin_mse"
    ] = "contrastive"
    weight: float = 1.0
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    # which score channel the term trains: dense | sparse | uni | a named dense part (cls, agg) |
    # sparse_idf (the documents' sparse output against IDF-weighted query tokens: no query model)
    channel: str = "dense"
    # agreement: the second channel (UnifieR Eq. 9: KL(P_dense || P_lexicon))
    other_channel: str = "sparse"
    # agreement: which side's distribution is a fixed target; "none" lets both heads learn (paper)
    stop_gradient: Literal["none", "first", "second"] = "none"
    # rank_consistency / distill_kl / margin_mse: whose scores teach (null: lexical for rank
    # consistency, reranker otherwise)
    teacher: Literal["reranker", "lexical"] | None = None
    temperature: float = 1.0  # contrastive / agreement / distill_kl softmax temperature
    teacher_temperature: float | None = None  # distill_kl: the teacher's (null: same as temperature)
    in_batch: bool = True  # contrastive: other queries' documents are negatives too
    # contrastive: train on BM25's residual (CLEAR's idea, as a softmax): the logits are
    # s(q, d) / temperature + bm25_residual * BM25(q, d) min-max normalised over the query's BM25
    # run, as the served fusion normalises it; 0 trains the channel alone
    bm25_residual: float = 0.0
    # FLOPS regularizer weights of the query and document sides (multiplied by `weight`)
    query_weight: float = 1.0
    doc_weight: float = 1.0
    # CLEAR residual margin m_r = xi - lambda_train * (bm25(q, d+) - bm25(q, d-))
    xi: float = 1.0
    lambda_train: float = 0.1

    def validate(self) -> None:
        if self.weight < 0:
            raise ValueError(f"weight must be >= 0, got {self.weight}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if self.teacher_temperature is not None and self.teacher_temperature <= 0:
            raise ValueError(f"teacher_temperature must be > 0 or null, got {self.teacher_temperature}")
        if self.query_weight < 0 or self.doc_weight < 0:
            raise ValueError("query_weight and doc_weight must be >= 0")
        if self.xi < 0 or self.lambda_train < 0:
            raise ValueError("xi and lambda_train must be >= 0")
        if self.bm25_residual < 0:
            raise ValueError(f"bm25_residual must be >= 0, got {self.bm25_residual}")


@dataclass
class LossSection:
    """The `losses` section: recipe -> training stage -> term name -> LossTermConfig."""

    recipes: dict[str, dict[str, dict[str, LossTermConfig]]] = field(default_factory=dict)

    def validate(self) -> None:
        for recipe, stages in self.recipes.items():
            for stage, terms in stages.items():
                if not terms:
                    raise ValueError(f"recipes.{recipe}.{stage}: needs at least one loss term")

    def terms(self, recipe: str, stage: str) -> dict[str, LossTermConfig]:
        """The loss terms of `stage` in `recipe`; KeyError names what is missing."""
        try:
            return self.recipes[recipe][stage]
        except KeyError as exc:
            have = sorted(self.recipes.get(recipe, {}))
            raise KeyError(f"losses: no terms for recipe {recipe!r} stage {stage!r} (stages: {have})") from exc
