#!/usr/bin/env bash
# `make gpu-check`: the GPU check (src/uniret/ops/gpu_check.py) from the kit `make gpu-kit` made,
# on a machine with no network: the kit's wheels go into a private folder (never the system's
# site-packages), the kit's backbones are found through $UNIRET_BACKBONES. docs/gpu.md.
# Extra arguments go to the check, e.g. --train-steps 20 --steps training,encode.
set -euo pipefail
cd "$(dirname "$0")/.."
KIT=${GPU_KIT:-.gpu-kit}
PY=${GPU_PYTHON:-python3}
SITE=${GPU_SITE:-${TMPDIR:-/tmp}/uniret-gpu-site}

if compgen -G "$KIT/wheels/*.whl" >/dev/null; then
  "$PY" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$KIT"/wheels/*.whl
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
if [ -d "$KIT/backbones" ]; then export UNIRET_BACKBONES="$PWD/$KIT/backbones"; fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false ORT_DISABLE_TELEMETRY=1 PYTHONUNBUFFERED=1
exec "$PY" -m uniret.ops.gpu_check --data "$KIT/data" "$@"
