#!/usr/bin/env bash
# `make gpu-check`: the GPU check (src/uniret/ops/gpu_check.py) from the kit `make gpu-kit` made,
# on a machine with no network, in one device-tool call (docs/gpu.md): a probe (versions, CUDA,
# the packages the check imports, the kit), the kit's backbones unpacked into a temp folder, the
# check. Each part has a time limit so a hang cannot eat the call's 15 minutes; a dry run
# (--allow-cpu) has none. Extra arguments go to the check, e.g. --train-steps 20 --steps training,encode.
set -euo pipefail
cd "$(dirname "$0")/.."
KIT=${GPU_KIT:-.gpu-kit}
PY=${GPU_PYTHON:-python3}
SITE=${GPU_SITE:-${TMPDIR:-/tmp}/uniret-gpu-site}
UNPACKED=${GPU_UNPACKED:-${TMPDIR:-/tmp}/uniret-gpu-kit}
probe_args=()
for arg in "$@"; do if [ "$arg" = --allow-cpu ]; then probe_args+=(--allow-cpu); fi; done
if [ ${#probe_args[@]} -eq 0 ]; then on_gpu=1; else on_gpu=0; fi
# seconds: probe + unpack + check stay under 8 minutes even when each hits its limit
PROBE_S=${GPU_PROBE_TIMEOUT:-$((on_gpu * 60))}
UNPACK_S=${GPU_UNPACK_TIMEOUT:-$((on_gpu * 60))}
CHECK_S=${GPU_CHECK_TIMEOUT:-$((on_gpu * 350))}

limited() {  # limited SECONDS CMD...: CMD killed (then KILLed 10 s later) at SECONDS; 0 = no limit
  local seconds=$1; shift
  if [ "$seconds" -gt 0 ]; then timeout -k 10 "$seconds" "$@"; else "$@"; fi
}

if compgen -G "$KIT/wheels/*.whl" >/dev/null; then
  "$PY" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$KIT"/wheels/*.whl
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false ORT_DISABLE_TELEMETRY=1 PYTHONUNBUFFERED=1
start=$SECONDS
limited "$PROBE_S" "$PY" -m uniret.ops.gpu_probe --kit "$KIT" "${probe_args[@]}"
if [ -d "$KIT/backbones" ]; then
  limited "$UNPACK_S" "$PY" -m uniret.ops.gpu_kit unpack --kit "$KIT" --out "$UNPACKED"
  export UNIRET_BACKBONES="$UNPACKED/backbones"
fi
rc=0
limited "$CHECK_S" "$PY" -m uniret.ops.gpu_check --data "$KIT/data" "$@" || rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "gpu-check: killed at its ${CHECK_S} s limit; the report holds the steps done before" >&2
fi
echo "gpu-check: exit $rc after $((SECONDS - start)) s"
exit "$rc"
