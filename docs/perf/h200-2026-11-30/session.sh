#!/usr/bin/env bash
# One device call on nvidia-h200-x2 (two H200s): the GPU side of issues #3/#4.
#   1. the kernel plan, half on each GPU (shards 1/2 and 2/2, in parallel)
#   2. the LTX-Video e2e plan on GPU 0 alone (nothing else running: eager mode is bound by the host's CPU)
#   3. the GPU-only tests
# Plans are made here (no GPU) with `python -m orchestrator +sweep=... dry_run=true plan_out=...`.
# Usage (device, repo root): bash docs/perf/h200-2026-11-30/session.sh KERNEL_PLAN E2E_PLAN [BUDGET_S]
# $OUT gets: results-kernels-{1,2}.jsonl, results-e2e.jsonl, pytest-gpu.log, session.log (<= 8 files).
# A stage cut by the budget keeps every job it finished (results are written as each job ends): rerun with
# `python3 -m workers run PLAN --out FILE --shard I/2 --resume` (I = 1 or 2).
set -u
PLAN=${1:?kernel plan}; E2E=${2:?e2e plan}; BUDGET=${3:-540}
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; T0=$(date +%s); SITE=$(mktemp -d)  # the wheels, installed for this call
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
stamp() { echo "$1 rc=$2 at $(( $(date +%s) - T0 )) s"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || exit 1
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpus.log"

for i in 1 2; do
  ( export CUDA_VISIBLE_DEVICES=$((i - 1))
    timeout "$(left)" python3 -m workers run "$PLAN" --out "$OUT/results-kernels-$i.jsonl" --shard $i/2 \
        > "$OUT/kernels-$i.log" 2>&1
    stamp "shard $i/2" $? >> "$OUT/kernels-$i.log" ) &
done
wait

if [ "$E2E" != none ]; then
  CUDA_VISIBLE_DEVICES=0 timeout "$(left)" python3 -m workers run "$E2E" --out "$OUT/results-e2e.jsonl" \
      > "$OUT/e2e.log" 2>&1
  stamp e2e $? >> "$OUT/e2e.log"
fi

if [ "${SKIP_PYTEST:-0}" != 1 ]; then
  CUDA_VISIBLE_DEVICES=0 timeout "$(left)" python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels tests/inject \
      tests/workers > "$OUT/pytest-gpu.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu.log"
fi

for f in gpus e2e kernels-1 kernels-2; do [ -f "$OUT/$f.log" ] && { echo "== $f"; cat "$OUT/$f.log"; rm "$OUT/$f.log"; }; done \
    > "$OUT/session.log"
tail -n 40 "$OUT/session.log"; tail -n 15 "$OUT/pytest-gpu.log" 2>/dev/null
