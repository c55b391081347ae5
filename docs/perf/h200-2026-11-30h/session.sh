#!/usr/bin/env bash
# Device calls for issues #3/#4, seventh session of 2026-11-30.
#   stage a (nvidia-h200): the kernels' GPU tests at the row-pointer review commit, then gap_probe.py (where a
#            graphed forward's timeline has no kernel running)
#   stage b (nvidia-h200): qk_shared_knobs.py; GPU tests named in TESTS (default: tests/kernels tests/inject);
#            gap_probe.py (eager, triton) and the e2e plan PLAN_DIR/plan-e2e-graph.jsonl with nvidia-smi logging the
#            SM clock and power every 200 ms beside them (smi-b.csv); then PLAN_DIR/plan-e2e-host.jsonl
#   stage c (nvidia-h200-x2): the kernel plan PLAN_DIR/plan-kernels.jsonl in two shards, one per GPU, each pinned
#            to half of the cores
#   stage d (nvidia-h200-x2): on GPU 0 (first half of the cores) the e2e plans PLAN_DIR/plan-e2e-graph.jsonl (with
#            nvidia-smi logging clocks and power of both GPUs every 200 ms beside it) and plan-e2e-host.jsonl, then
#            gap_probe.py; beside them on GPU 1 the GPU tests of tests/kernels and tests/inject
#   Stages c and d pack what they write into one archive, bundle-STAGE.tgz (a call brings back at most 8 files).
# Usage (device, repo root): bash docs/perf/h200-2026-11-30h/session.sh a|b|c [PLAN_DIR]
set -u
STAGE=${1:?a, b or c}; D=${2:-docs/perf/h200-2026-11-30h}; P=docs/perf/h200-2026-11-30h
. docs/perf/device_preamble.sh
gpu_tests() {  # $1: seconds, then the test paths
  local t=$1; shift
  timeout $t python3 -m pytest -q -m gpu -p no:cacheprovider "$@" > "$OUT/pytest-gpu-$STAGE.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-$STAGE.log"
  tail -n 3 "$OUT/pytest-gpu-$STAGE.log"
}
if [ "$STAGE" = a ]; then
  gpu_tests 250 tests/kernels
  timeout $(left) python3 $P/gap_probe.py > "$OUT/gap-probe-a.log" 2>&1
  stamp probe $? >> "$OUT/gap-probe-a.log"; tail -n 1 "$OUT/gap-probe-a.log"
elif [ "$STAGE" = b ]; then
  timeout 90 python3 $P/qk_shared_knobs.py > "$OUT/qk-shared-knobs.log" 2>&1
  stamp knobs $? >> "$OUT/qk-shared-knobs.log"; tail -n 1 "$OUT/qk-shared-knobs.log"
  gpu_tests 200 ${TESTS:-tests/kernels tests/inject}
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 \
      > "$OUT/smi-b.csv" & SMI=$!
  echo "probe starts $(date +%H:%M:%S.%N)" > "$OUT/marks-b.log"
  timeout 120 python3 $P/gap_probe.py --modes eager,triton > "$OUT/gap-probe-b.log" 2>&1
  stamp probe $? >> "$OUT/gap-probe-b.log"; tail -n 1 "$OUT/gap-probe-b.log"
  echo "e2e graph starts $(date +%H:%M:%S.%N)" >> "$OUT/marks-b.log"
  timeout $(left) python3 -m workers run $D/plan-e2e-graph.jsonl --out "$OUT/results-e2e-graph-b.jsonl" \
      > "$OUT/e2e-b.log" 2>&1
  stamp "e2e graph" $? >> "$OUT/e2e-b.log"
  echo "e2e graph ends $(date +%H:%M:%S.%N)" >> "$OUT/marks-b.log"
  kill $SMI
  timeout $(left) python3 -m workers run $D/plan-e2e-host.jsonl --out "$OUT/results-e2e-host-b.jsonl" \
      >> "$OUT/e2e-b.log" 2>&1
  stamp "e2e host" $? >> "$OUT/e2e-b.log"; grep -h "rc=" "$OUT/e2e-b.log"
elif [ "$STAGE" = d ]; then
  N=$(nproc); H=$((N / 2)); LO=0-$((H - 1)); HI=$H-$((N - 1))
  ( CUDA_VISIBLE_DEVICES=1 taskset -c $HI timeout 400 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels \
        tests/inject > "$OUT/pytest-gpu-d.log" 2>&1
    stamp pytest $? >> "$OUT/pytest-gpu-d.log" ) &
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 \
      > "$OUT/smi-d.csv" & SMI=$!
  echo "e2e graph starts $(date +%H:%M:%S.%N)" > "$OUT/marks-d.log"
  CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout $(left) python3 -m workers run $D/plan-e2e-graph.jsonl \
      --out "$OUT/results-e2e-graph-d.jsonl" > "$OUT/e2e-d.log" 2>&1
  stamp "e2e graph" $? >> "$OUT/e2e-d.log"
  echo "e2e graph ends $(date +%H:%M:%S.%N)" >> "$OUT/marks-d.log"
  kill $SMI
  CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout $(( $(left) - 60 )) python3 -m workers run $D/plan-e2e-host.jsonl \
      --out "$OUT/results-e2e-host-d.jsonl" >> "$OUT/e2e-d.log" 2>&1
  stamp "e2e host" $? >> "$OUT/e2e-d.log"
  CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout $(( $(left) - 10 )) python3 $P/gap_probe.py --modes eager,triton \
      > "$OUT/gap-probe-d.log" 2>&1
  stamp probe $? >> "$OUT/gap-probe-d.log"
  wait
  grep -h "rc=" "$OUT/e2e-d.log" "$OUT/gap-probe-d.log" "$OUT/pytest-gpu-d.log"; tail -n 2 "$OUT/pytest-gpu-d.log"
else
  N=$(nproc); H=$((N / 2))
  for i in 1 2; do
    cores=0-$((H - 1)); [ $i = 2 ] && cores=$H-$((N - 1))
    ( CUDA_VISIBLE_DEVICES=$((i - 1)) taskset -c $cores timeout $(left) python3 -m workers run $D/plan-kernels.jsonl \
          --out "$OUT/results-kernels-$i.jsonl" --shard $i/2 > "$OUT/kernels-$i.log" 2>&1
      stamp "shard $i/2" $? >> "$OUT/kernels-$i.log" ) &
  done
  wait
  tail -n 1 "$OUT/kernels-1.log" "$OUT/kernels-2.log"
fi
if [ "$STAGE" = c ] || [ "$STAGE" = d ]; then
  # written beside $OUT, then moved in: tar reading the folder it writes into fails ("file changed as we read it"),
  # as stage d's call did (its files came back loose, smi-d.csv only inside the archive)
  B=$(mktemp) && tar czf "$B" -C "$OUT" . && find "$OUT" -type f -delete && mv "$B" "$OUT/bundle-$STAGE.tgz"
fi
