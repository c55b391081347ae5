#!/usr/bin/env bash
# Device calls for issues #3/#4, sixth session of 2026-11-30 (nvidia-h200: one H200, 16 cores).
#   stage a: the e2e plan in PLAN_DIR (every mode, the +graph ones included), then the GPU tests
#   stage b: the e2e plan in PLAN_DIR only
# Usage (device, repo root): bash docs/perf/h200-2026-11-30g/session.sh a|b [PLAN_DIR]
set -u
STAGE=${1:?a or b}; D=${2:-docs/perf/h200-2026-11-30g}
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; T0=$(date +%s); SITE=$(mktemp -d)  # the wheels, installed for this call
stamp() { echo "$1 rc=$2 at $(( $(date +%s) - T0 )) s"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || exit 1
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpus-$STAGE.log"
echo "cores $(nproc)" >> "$OUT/gpus-$STAGE.log"
timeout 420 python3 -m workers run $D/plan-e2e.jsonl --out "$OUT/results-e2e-$STAGE.jsonl" > "$OUT/e2e-$STAGE.log" 2>&1
stamp "e2e $STAGE" $? >> "$OUT/e2e-$STAGE.log"
if [ "$STAGE" = a ]; then
  timeout $(( 575 - ($(date +%s) - T0) )) python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels tests/inject \
      tests/workers > "$OUT/pytest-gpu-a.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-a.log"
  tail -n 3 "$OUT/pytest-gpu-a.log"
fi
grep -h "rc=" "$OUT/e2e-$STAGE.log"
