"""Stage distill: reranker-taught training (UnifieR 4.4 / Fig. 8, LED w/ RT).

Starts from the continual model (else the warm-up one) and adds KL distillation from the
cross-encoder's scores over each query's candidate list (its mined group) to the recipe's
`losses.recipes.<recipe>.distill` objective. Teacher scores are computed per batch, only for the
groups the step budget visits. Writes artifacts/distill/{model/, metrics/, manifest.json}.
"""

from __future__ import annotations

from typing import Any

from uniret.runtime import StageContext
from uniret.stages.biencoder import run_biencoder_stage


def run(ctx: StageContext) -> dict[str, Any]:
    """Train the distillation stage (see module doc); returns the manifest metrics."""
    return run_biencoder_stage(ctx, "distill", start_from=("continual", "warmup"), negatives_from="mine")
