#!/usr/bin/env bash
# `make gpu-dry-run`: the GPU check's exact device command with --allow-cpu, on this CPU, from a copy of
# what the device tool sends (the tree git would send + the kit), with no network (a new network
# namespace when `unshare -n` works, offline hub variables always) and every package the GPU machine
# lacks made unimportable (scripts/gpu_machine/sitecustomize.py). It proves the kit complete; it
# measures nothing about GPUs. Usage: scripts/gpu_dry_run.sh OUT_DIR [extra check arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${1:?usage: scripts/gpu_dry_run.sh OUT_DIR [check arguments]}"); shift
KIT=${GPU_KIT:-.gpu-kit}
PY=$(realpath -s "${GPU_PYTHON:-.venv/bin/python}")
test -f "$KIT/kit.json" || { echo "gpu-dry-run: no $KIT/kit.json: run make gpu-kit first" >&2; exit 2; }
COPY=$(mktemp -d "${TMPDIR:-/tmp}/uniret-gpu-dry-run.XXXXXX")
trap 'rm -rf "$COPY"' EXIT
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - 2>/dev/null | tar -C "$COPY" -xf -
cp -r "$KIT" "$COPY/.gpu-kit"
mkdir -p "$OUT"
NET=(); if unshare -n true 2>/dev/null; then NET=(unshare -n); fi
echo "gpu-dry-run: copy $COPY, network: ${NET[*]:-not isolated (unshare -n failed), hub variables offline}"
cd "$COPY"
start=$(date +%s.%N)
rc=0
# the device command of docs/gpu.md, with --allow-cpu and this machine's python
"${NET[@]}" env GPU_PYTHON="$PY" PYTHONPATH="$COPY/scripts/gpu_machine:$COPY/src" OUT="$OUT" \
  GPU_DRY_RUN_MODULES="$OUT/modules.txt" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  bash -c 'set -o pipefail; scripts/gpu_check.sh --out $OUT --allow-cpu "$@" 2>&1 | tee $OUT/gpu_check.log' _ "$@" || rc=$?
wall=$(echo "$(date +%s.%N) - $start" | bc)
echo "gpu-dry-run: exit $rc, wall ${wall} s, $(find "$OUT" -type f | wc -l) files in $OUT"
exit "$rc"
