#!/bin/bash
# E73: the feedback stage's window (feedback.window_days) on a loop arm's workspace, NFCorpus dev.
# For each window: the feedback stage on the workspace's spans, then the static query tables rebuilt
# from its output and hybrid_fast's weights learned as the index stage does (lab/static_query_levers.py).
# The workspace's own settings are run again at the end, so its artifacts/feedback is what it was.
#   lab/feedback_window.sh runs/loop/debiased lab/results/feedback_window
set -euo pipefail
WORK=${1:?the loop arm's workspace}
OUT=${2:?an output folder}
mkdir -p "$OUT"
for N in 1 2 3 7; do
  .venv/bin/python - "$WORK/params.yaml" "$N" "$OUT/params.w$N.yaml" <<'PY'
import sys, yaml
raw = yaml.safe_load(open(sys.argv[1]))
raw["feedback"]["window_days"] = int(sys.argv[2])
yaml.safe_dump(raw, open(sys.argv[3], "w"), sort_keys=False)
PY
  .venv/bin/uniret feedback --params "$OUT/params.w$N.yaml" --artifacts "$WORK/artifacts"
  .venv/bin/python lab/static_query_levers.py --params "$OUT/params.w$N.yaml" --artifacts "$WORK/artifacts" \
    --variants rebuilt --out "$OUT/window_$N.json"
done
.venv/bin/uniret feedback --params "$WORK/params.yaml" --artifacts "$WORK/artifacts"
