#!/usr/bin/env bash
# Device calls on nvidia-h200-x2 (two H200s, 32 cores) for issues #3/#4, fifth session of 2026-11-30.
#   stage a: on GPU 0 alone (nothing else on the machine): the e2e plan in PLAN_DIR twice, then host_probe_3.py;
#            then rope_whole_rows.py on GPU 1 beside the GPU tests on GPU 0
#   stage b: on GPU 0 alone: the e2e plan in PLAN_DIR twice, then host_probe_3.py; then the GPU tests
# Usage (device, repo root): bash docs/perf/h200-2026-11-30f/session.sh a|b [PLAN_DIR]
set -u
STAGE=${1:?a or b}; D=${2:-docs/perf/h200-2026-11-30f}; P=docs/perf/h200-2026-11-30f
. docs/perf/device_preamble.sh  # wheels, PYTHONPATH, the GPU list, stamp
N=$(nproc); H=$((N / 2)); LO=0-$((H - 1)); HI=$H-$((N - 1))
gpu_tests() {  # $1: GPU index, $2: seconds, $3: cores
  CUDA_VISIBLE_DEVICES=$1 taskset -c $3 timeout $2 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels tests/inject \
      tests/workers > "$OUT/pytest-gpu-$STAGE.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-$STAGE.log"
}
e2e() {  # $1: tag
  CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout 200 python3 -m workers run $D/plan-e2e.jsonl \
      --out "$OUT/results-e2e-$1.jsonl" >> "$OUT/e2e.log" 2>&1
  stamp "e2e $1" $? >> "$OUT/e2e.log"
}

if [ "$STAGE" = a ]; then
  e2e a1; e2e a2
  CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout 150 python3 $P/host_probe_3.py > "$OUT/host-probe-3.log" 2>&1
  stamp probe $? >> "$OUT/host-probe-3.log"
  ( CUDA_VISIBLE_DEVICES=1 taskset -c $HI timeout 200 python3 $P/rope_whole_rows.py > "$OUT/rope-whole-rows.log" 2>&1
    stamp rope $? >> "$OUT/rope-whole-rows.log" ) &
  gpu_tests 0 $(( 570 - ($(date +%s) - T0) )) $LO
  wait
  grep -h "rc=" "$OUT/e2e.log" "$OUT/host-probe-3.log" "$OUT/rope-whole-rows.log"; tail -n 3 "$OUT/pytest-gpu-a.log"
else
  e2e b1; e2e b2
  CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout 150 python3 $P/host_probe_3.py > "$OUT/host-probe-3b.log" 2>&1
  stamp probe $? >> "$OUT/host-probe-3b.log"
  gpu_tests 0 $(( 570 - ($(date +%s) - T0) )) $LO
  grep -h "rc=" "$OUT/e2e.log" "$OUT/host-probe-3b.log"; tail -n 3 "$OUT/pytest-gpu-b.log"
fi
