"""Stage warmup: the active recipe's model trained from its pretrained backbone on BM25 negatives.

UnifieR (3.3, Eq. 7): contrastive loss on both the dense and the lexicon module, plus FLOPS with
a quadratic ramp-up; LED: the dense student's warm-up (Eq. 3); CLEAR: the residual-margin hinge
on BM25's mistakes; Aggretriever: L + 0.5 L_agg + 0.5 L_cls. The objective is
`losses.warmup` of recipes/<recipe>.yaml. Writes artifacts/warmup/{model/, metrics/train.tsv, manifest.json}.
"""

from __future__ import annotations

from typing import Any

from uniret.runtime import StageContext
from uniret.stages.biencoder import run_biencoder_stage


def run(ctx: StageContext) -> dict[str, Any]:
    """Train the warm-up model (see module doc); returns the manifest metrics."""
    return run_biencoder_stage(ctx, "warmup", start_from=(), negatives_from="bm25")
