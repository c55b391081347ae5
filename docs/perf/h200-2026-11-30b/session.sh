#!/usr/bin/env bash
# Device calls on nvidia-h200-x2 (two H200s, 32 cores) for issues #3/#4, second session of 2026-11-30.
#   stage a: host probe (GPU 0) beside the launch-knob sweep (GPU 1), each on its own half of the cores;
#            then the LTX-Video e2e plan alone on GPU 0 (eager mode is bound by the host); then the GPU tests
#   stage c (second call, after the launch plans and the measured norm warps): the e2e plan alone on GPU 0, twice,
#            then the host probe alone, then the GPU tests
#   stage b: the kernel plan, shard 1/2 on GPU 0 and 2/2 on GPU 1 at the same time, each process (and the
#            Inductor compile workers it starts) pinned to its own half of the cores, so that neither shard's
#            compiles slow the other's host (the fault of the first session's AdaLN re-run)
# Plans are made here (no GPU): python -m orchestrator +sweep=... dry_run=true plan_out=...
# Usage (device, repo root): bash docs/perf/h200-2026-11-30b/session.sh a|b|c [PLAN_DIR]  (plans: PLAN_DIR, default
# this folder)
set -u
STAGE=${1:?a, b or c}; D=${2:-docs/perf/h200-2026-11-30b}; P=docs/perf/h200-2026-11-30
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; T0=$(date +%s); SITE=$(mktemp -d)  # the wheels, installed for this call
stamp() { echo "$1 rc=$2 at $(( $(date +%s) - T0 )) s"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || exit 1
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1
N=$(nproc); H=$((N / 2)); LO=0-$((H - 1)); HI=$H-$((N - 1))
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpus-$STAGE.log"
echo "cores $N; commit $(git rev-parse --short HEAD 2>/dev/null)" >> "$OUT/gpus-$STAGE.log"

if [ "$STAGE" = a ]; then
  ( CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout 240 python3 $P/host_probe_2.py > "$OUT/host-probe.log" 2>&1
    stamp probe $? >> "$OUT/host-probe.log" ) &
  ( CUDA_VISIBLE_DEVICES=1 taskset -c $HI timeout 300 python3 $P/launch_knobs.py > "$OUT/launch-knobs.log" 2>&1
    stamp knobs $? >> "$OUT/launch-knobs.log" ) &
  wait
  CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m workers run $D/plan-e2e.jsonl --out "$OUT/results-e2e.jsonl" \
      > "$OUT/e2e.log" 2>&1
  stamp e2e $? >> "$OUT/e2e.log"
  CUDA_VISIBLE_DEVICES=0 timeout $(( 570 - ($(date +%s) - T0) )) python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/kernels tests/inject tests/workers > "$OUT/pytest-gpu.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu.log"
  tail -n 5 "$OUT/e2e.log" "$OUT/pytest-gpu.log"; cat "$OUT/host-probe.log" | head -20
elif [ "$STAGE" = c ]; then
  for r in 1 2; do  # the same job twice: the run-to-run spread of a host-bound measurement
    CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m workers run $D/plan-e2e.jsonl --out "$OUT/results-e2e-$r.jsonl" \
        >> "$OUT/e2e.log" 2>&1
    stamp "e2e $r" $? >> "$OUT/e2e.log"
  done
  CUDA_VISIBLE_DEVICES=0 timeout 120 python3 $P/host_probe_2.py > "$OUT/host-probe.log" 2>&1
  stamp probe $? >> "$OUT/host-probe.log"
  CUDA_VISIBLE_DEVICES=0 timeout $(( 570 - ($(date +%s) - T0) )) python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/kernels tests/inject tests/workers > "$OUT/pytest-gpu.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu.log"
  tail -n 5 "$OUT/e2e.log" "$OUT/pytest-gpu.log"; head -n 14 "$OUT/host-probe.log"; grep "== 2" "$OUT/host-probe.log"
else
  for i in 1 2; do
    cores=$LO; [ $i = 2 ] && cores=$HI
    ( CUDA_VISIBLE_DEVICES=$((i - 1)) taskset -c $cores timeout 540 python3 -m workers run $D/plan-kernels.jsonl \
          --out "$OUT/results-kernels-$i.jsonl" --shard $i/2 > "$OUT/kernels-$i.log" 2>&1
      stamp "shard $i/2" $? >> "$OUT/kernels-$i.log" ) &
  done
  wait
  tail -n 4 "$OUT/kernels-1.log" "$OUT/kernels-2.log"
fi
