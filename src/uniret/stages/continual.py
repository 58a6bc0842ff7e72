"""Stage continual: continue the warm-up model on the self-mined negatives N_den U N_lex.

UnifieR (3.3): contrastive on both modules + the agreement KL between them (Eq. 9) + FLOPS;
LED: lexicon-augmented contrastive + pair-wise rank consistency with the frozen lexical teacher
(Eq. 11); Aggretriever: its warm-up objective on self-mined negatives. The objective is
`losses.continual` of recipes/<recipe>.yaml. With training.continual.clicks, serving's clicks (the
feedback stage's pairs) join the examples or replace them (uniret.stages.training_clicks); with
training.continual.start_model, it warm-starts from that checkpoint (production's) instead of warmup's.
Writes artifacts/continual/{model/, metrics/, manifest.json}.
"""

from __future__ import annotations

from typing import Any

from uniret.runtime import StageContext
from uniret.stages.biencoder import run_biencoder_stage


def run(ctx: StageContext) -> dict[str, Any]:
    """Train the continual stage (see module doc); returns the manifest metrics."""
    return run_biencoder_stage(ctx, "continual", start_from=("warmup",), negatives_from="mine")
