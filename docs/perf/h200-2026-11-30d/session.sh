#!/usr/bin/env bash
# Device calls on nvidia-h200-x2 (two H200s, 32 cores) for issues #3/#4, fourth session of 2026-11-30.
#   stage a: launch-knob sweep 2 (GPU 0, first half of the cores) beside the GELU-epilogue probe and then the GPU
#            tests (GPU 1, second half)
#   stage b: the kernel plan, shard 1/2 on GPU 0 and 2/2 on GPU 1 at the same time, each pinned to half the cores
#   stage c: the LTX-Video e2e plans in PLAN_DIR (plan-e2e*.jsonl) one after another on GPU 0 (first half of the
#            cores), then the host probe there; beside them on GPU 1 (second half): the knob sweep of
#            adaln_layer_norm, then the GPU tests
#   stage d: the e2e plan in PLAN_DIR alone on GPU 0, twice (nothing else on the machine); then the kernel plan
#            plan-kernels.jsonl there on GPU 0 beside the GPU tests on GPU 1
# Usage (device, repo root): bash docs/perf/h200-2026-11-30d/session.sh a|b|c|d [PLAN_DIR]
set -u
STAGE=${1:?a, b, c or d}; D=${2:-docs/perf/h200-2026-11-30d}; P=docs/perf/h200-2026-11-30d
. docs/perf/device_preamble.sh  # wheels, PYTHONPATH, the GPU list, stamp
N=$(nproc); H=$((N / 2)); LO=0-$((H - 1)); HI=$H-$((N - 1))
gpu_tests() {  # $1: GPU index, $2: seconds, $3: cores
  CUDA_VISIBLE_DEVICES=$1 taskset -c $3 timeout $2 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels tests/inject \
      tests/workers > "$OUT/pytest-gpu.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu.log"
}

if [ "$STAGE" = a ]; then
  ( CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout 480 python3 $P/launch_knobs_2.py > "$OUT/launch-knobs-2.log" 2>&1
    stamp knobs $? >> "$OUT/launch-knobs-2.log" ) &
  ( CUDA_VISIBLE_DEVICES=1 taskset -c $HI timeout 100 python3 $P/gelu_epilogue_probe.py > "$OUT/gelu-epilogue.log" 2>&1
    stamp probe $? >> "$OUT/gelu-epilogue.log"
    gpu_tests 1 $(( 500 - ($(date +%s) - T0) )) $HI ) &
  wait
  cat "$OUT/gelu-epilogue.log"; tail -n 5 "$OUT/pytest-gpu.log"; grep -c "^| " "$OUT/launch-knobs-2.log"
elif [ "$STAGE" = d ]; then
  for r in 1 2; do
    CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout 200 python3 -m workers run $D/plan-e2e.jsonl \
        --out "$OUT/results-e2e-$r.jsonl" >> "$OUT/e2e.log" 2>&1
    stamp "e2e $r" $? >> "$OUT/e2e.log"
  done
  ( gpu_tests 1 $(( 560 - ($(date +%s) - T0) )) $HI ) &
  CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout $(( 550 - ($(date +%s) - T0) )) python3 -m workers run \
      $D/plan-kernels.jsonl --out "$OUT/results-kernels.jsonl" > "$OUT/kernels.log" 2>&1
  stamp kernels $? >> "$OUT/kernels.log"
  wait
  grep -h "rc=" "$OUT/e2e.log" "$OUT/kernels.log"; tail -n 3 "$OUT/pytest-gpu.log"
elif [ "$STAGE" = b ]; then
  for i in 1 2; do
    cores=$LO; [ $i = 2 ] && cores=$HI
    ( CUDA_VISIBLE_DEVICES=$((i - 1)) taskset -c $cores timeout 540 python3 -m workers run $D/plan-kernels.jsonl \
          --out "$OUT/results-kernels-$i.jsonl" --shard $i/2 > "$OUT/kernels-$i.log" 2>&1
      stamp "shard $i/2" $? >> "$OUT/kernels-$i.log" ) &
  done
  wait
  tail -n 4 "$OUT/kernels-1.log" "$OUT/kernels-2.log"
else
  ( CUDA_VISIBLE_DEVICES=1 taskset -c $HI timeout 200 python3 $P/launch_knobs_2.py adaln_layer_norm \
        > "$OUT/launch-knobs-2c.log" 2>&1
    stamp knobs $? >> "$OUT/launch-knobs-2c.log"
    gpu_tests 1 $(( 540 - ($(date +%s) - T0) )) $HI ) &
  for plan in $D/plan-e2e*.jsonl; do
    tag=$(basename "$plan" .jsonl | sed 's/^plan-//')
    CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout $(( 500 - ($(date +%s) - T0) )) python3 -m workers run "$plan" \
        --out "$OUT/results-$tag.jsonl" >> "$OUT/e2e.log" 2>&1
    stamp "$tag" $? >> "$OUT/e2e.log"
  done
  CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout $(( 550 - ($(date +%s) - T0) )) python3 \
      docs/perf/h200-2026-11-30/host_probe_2.py > "$OUT/host-probe.log" 2>&1
  stamp probe $? >> "$OUT/host-probe.log"
  wait
  grep -h "rc=" "$OUT/e2e.log" "$OUT/launch-knobs-2c.log" "$OUT/host-probe.log"; tail -n 3 "$OUT/pytest-gpu.log"
fi
