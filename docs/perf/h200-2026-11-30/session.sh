#!/usr/bin/env bash
# One device call on nvidia-h200-x2 (two H200s): the GPU side of issues #3/#4, the two GPUs in parallel.
#   GPU 0: the LTX-Video e2e plan (all modes, profiled), then shard 2/2 of the kernel plan
#   GPU 1: shard 1/2 of the kernel plan, then the GPU-only tests
# Plans are made here (no GPU) with `python -m orchestrator +sweep=... dry_run=true plan_out=...`.
# Usage (device, repo root): bash docs/perf/h200-2026-11-30/session.sh KERNEL_PLAN E2E_PLAN [BUDGET_S]
# $OUT gets: results-kernels-{1,2}.jsonl, results-e2e.jsonl, pytest-gpu.log, session.log (<= 8 files).
# A stage cut by the budget keeps every job it finished (results are written as each job ends): rerun with
# `python3 -m workers run PLAN --out FILE --shard I/2 --resume` (I = 1 or 2).
set -u
PLAN=${1:?kernel plan}; E2E=${2:?e2e plan}; BUDGET=${3:-540}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; T0=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpus.log"

( export CUDA_VISIBLE_DEVICES=1
  timeout "$(left)" python3 -m workers run "$PLAN" --out "$OUT/results-kernels-1.jsonl" --shard 1/2 \
      > "$OUT/kernels-1.log" 2>&1
  echo "shard 1/2 rc=$? at $(( $(date +%s) - T0 )) s" >> "$OUT/kernels-1.log"
  t=$(left); [ "$t" -gt 240 ] && t=240
  [ "${SKIP_PYTEST:-0}" = 1 ] || { timeout "$t" python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels tests/inject tests/workers \
      > "$OUT/pytest-gpu.log" 2>&1
  echo "pytest rc=$? at $(( $(date +%s) - T0 )) s" >> "$OUT/pytest-gpu.log"; } ) &
A=$!
( export CUDA_VISIBLE_DEVICES=0
  [ "$E2E" = none ] || { timeout "$(left)" python3 -m workers run "$E2E" --out "$OUT/results-e2e.jsonl" > "$OUT/e2e.log" 2>&1
  echo "e2e rc=$? at $(( $(date +%s) - T0 )) s" >> "$OUT/e2e.log"; }
  timeout "$(left)" python3 -m workers run "$PLAN" --out "$OUT/results-kernels-2.jsonl" --shard 2/2 \
      > "$OUT/kernels-2.log" 2>&1
  echo "shard 2/2 rc=$? at $(( $(date +%s) - T0 )) s" >> "$OUT/kernels-2.log" ) &
B=$!
wait $A $B
for f in gpus e2e kernels-1 kernels-2; do [ -f "$OUT/$f.log" ] && { echo "== $f"; cat "$OUT/$f.log"; rm "$OUT/$f.log"; }; done \
    > "$OUT/session.log"
tail -n 40 "$OUT/session.log"; tail -n 15 "$OUT/pytest-gpu.log" 2>/dev/null
