#!/bin/bash
# E77: a finished run's bundle evaluated again with the corpora other than the train dataset fused with
# given weights (index.fusion.zero_shot_weights as the loop now carries them from production), the
# rest untouched. The artifacts are hard-linked into OUT (nothing of RUN is written); the bundle's
# manifest gets the weights, its checksum is updated, and `uniret evaluate` scores every set.
#   lab/zero_shot_weights.sh runs/e74/naive-160 runs/e77/naive hybrid_fast 0.35 0.10 0.55
set -euo pipefail
RUN=${1:?a run folder holding params.yaml and artifacts/}
OUT=${2:?an output folder}
MODE=${3:?a fusion mode, e.g. hybrid_fast}
shift 3
WEIGHTS=$(printf '%s,' "$@")
mkdir -p "$OUT"
rm -rf "$OUT/artifacts"
cp -al "$RUN/artifacts" "$OUT/artifacts"
rm -rf "$OUT/artifacts/evaluate"
cp "$RUN/params.yaml" "$OUT/params.yaml"
.venv/bin/python - "$OUT/artifacts/index/bundle" "$MODE" "[${WEIGHTS%,}]" <<'PY'
import hashlib, json, sys
from pathlib import Path
bundle, mode, weights = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
path = bundle / "manifest.json"
manifest = json.loads(path.read_text())
manifest["fusion"]["modes"][mode].update(zero_shot_weights=weights, zero_shot_sets=[])
path.unlink()  # a hard link into RUN: replaced, never written through
path.write_text(json.dumps(manifest, indent=2))
sums = bundle / "SHA256SUMS"
digest = hashlib.sha256(path.read_bytes()).hexdigest()
lines = [f"{digest}  manifest.json" if line.endswith("  manifest.json") else line
         for line in sums.read_text().splitlines()]
sums.unlink()
sums.write_text("\n".join(lines) + "\n")
PY
.venv/bin/uniret evaluate --params "$OUT/params.yaml" --artifacts "$OUT/artifacts"
