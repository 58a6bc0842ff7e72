#!/bin/bash
# E74: does retraining the transformer on a loop arm's clicks add to what the static query side learns
# from them? On a copy of the arm's workspace (its feedback output: the training days' clicks), the
# continual stage on the clicks alone (training.continual.clicks, labels off), warm-started from the
# workspace's checkpoint, then the index stage (the corpus encoded again, the static tables and
# hybrid_fast's weights rebuilt from the same clicks), then NFCorpus dev as lab/static_query_levers.py
# scores it. The workspace itself is scored the same way first (the transformer untouched).
#   lab/continual_on_clicks.sh runs/loop/debiased lab/results/continual_on_clicks 160 ips
set -euo pipefail
WORK=${1:?the loop arm\'s workspace}
OUT=${2:?an output folder}
STEPS=${3:-160}
SOURCE=${4:-ips}
RUN="$OUT/$SOURCE-$STEPS"
mkdir -p "$RUN/artifacts"
[ -f "$OUT/untouched.json" ] || .venv/bin/python lab/static_query_levers.py --params "$WORK/params.yaml" \
  --artifacts "$WORK/artifacts" --variants default --out "$OUT/untouched.json"
for stage in validate bm25 feedback cache; do
  [ -e "$RUN/artifacts/$stage" ] || cp -r "$WORK/artifacts/$stage" "$RUN/artifacts/$stage"
done
[ -e "$RUN/start_model" ] || cp -r "$WORK/artifacts/continual/model" "$RUN/start_model"
.venv/bin/python - "$WORK/params.yaml" "$RUN" "$STEPS" "$SOURCE" <<'PY'
import shutil, sys
from pathlib import Path
import yaml
from uniret.config.loader import merge_overrides
from uniret.config.recipe_files import recipes_dir
params, run, steps, source = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
raw = yaml.safe_load(params.read_text())
raw = merge_overrides(raw, {"training": {"continual": {"start_model": str(run / "start_model"),
                                                      "clicks": {"source": source, "labels": False}}}})
(run / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
shutil.rmtree(run / "recipes", ignore_errors=True)
shutil.copytree(recipes_dir(params), run / "recipes")
recipe = run / "recipes" / f"{raw['model']['recipe']}.yaml"
doc = yaml.safe_load(recipe.read_text())
doc = merge_overrides(doc, {"profiles": {raw["profile"]: {"train": {"continual": {"max_steps": steps}}}}})
recipe.write_text(yaml.safe_dump(doc, sort_keys=False))
PY
.venv/bin/uniret continual --params "$RUN/params.yaml" --artifacts "$RUN/artifacts"
.venv/bin/uniret index --params "$RUN/params.yaml" --artifacts "$RUN/artifacts"
.venv/bin/python lab/static_query_levers.py --params "$RUN/params.yaml" --artifacts "$RUN/artifacts" \
  --variants default --out "$OUT/retrained-$SOURCE-$STEPS.json"
