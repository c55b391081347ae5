#!/usr/bin/env bash
# Device calls for issue #3, eleventh session of 2026-11-30.
#   stage a (nvidia-h200-x2): on GPU 1 (second half of the cores) the GPU tests of tests/workers/test_timing.py
#            (the read flush, kernel_time, cold_graph_time: then in workers.timing), then shard 2/2 of the kernel
#            plan; on GPU 0 (first half) shard 1/2.  The plan is every kernel, every shape, every implementation, timed by the new workers.timing
#            (cast-free read flush, the GPU held busy before the start event, kernel_time_us from the profiler).
#   stage b (nvidia-h200): the GPU tests of tests/workers/test_timing.py again, then norm_cold_knobs.py (rms_norm and
#            adaln_rms launch knobs at 2048-wide rows, read with the L2 flushed)
#   stage c (nvidia-h200): copy_calibration.py (the copy read per call and by kernel time at the grid's sizes)
#   stage d (nvidia-h200): residual_knobs.py (gated_residual and add_rms_norm_modulate launch knobs, L2 flushed)
#   Packs what it wrote into one archive, bundle-STAGE.tgz (a call brings back at most 8 files).
# Usage (device, repo root, .whl/ carried): bash docs/perf/h200-2026-11-30l/session.sh a|b|c|d
set -u
STAGE=${1:?a, b, c or d}; P=docs/perf/h200-2026-11-30l
. docs/perf/device_preamble.sh
if [ "$STAGE" = a ]; then
  N=$(nproc); H=$((N / 2)); LO=0-$((H - 1)); HI=$H-$((N - 1))
  ( export CUDA_VISIBLE_DEVICES=1
    taskset -c $HI timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/workers/test_timing.py \
        > "$OUT/pytest-gpu-a.log" 2>&1
    stamp pytest $? >> "$OUT/pytest-gpu-a.log"
    taskset -c $HI timeout $(left) python3 -m workers run $P/plan-kernels.jsonl --shard 2/2 \
        --out "$OUT/results-kernels-2.jsonl" > "$OUT/kernels-2.log" 2>&1
    stamp "shard 2/2" $? >> "$OUT/kernels-2.log" ) &
  CUDA_VISIBLE_DEVICES=0 taskset -c $LO timeout $(left) python3 -m workers run $P/plan-kernels.jsonl --shard 1/2 \
      --out "$OUT/results-kernels-1.jsonl" > "$OUT/kernels-1.log" 2>&1
  stamp "shard 1/2" $? >> "$OUT/kernels-1.log"
  wait
  tail -n 3 "$OUT/pytest-gpu-a.log"; tail -n 1 "$OUT/kernels-1.log" "$OUT/kernels-2.log"
  gzip "$OUT"/results-kernels-*.jsonl
elif [ "$STAGE" = b ]; then
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/workers/test_timing.py > "$OUT/pytest-gpu-b.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-b.log"; tail -n 3 "$OUT/pytest-gpu-b.log"
  timeout $(left) python3 $P/norm_cold_knobs.py > "$OUT/norm-cold-knobs-b.log" 2>&1
  stamp knobs $? >> "$OUT/norm-cold-knobs-b.log"; cat "$OUT/norm-cold-knobs-b.log"
elif [ "$STAGE" = c ]; then
  timeout $(left) python3 $P/copy_calibration.py > "$OUT/copy-calibration-c.log" 2>&1
  stamp calibration $? >> "$OUT/copy-calibration-c.log"; cat "$OUT/copy-calibration-c.log"
elif [ "$STAGE" = d ]; then
  timeout $(left) python3 $P/residual_knobs.py > "$OUT/residual-knobs-d.log" 2>&1
  stamp knobs $? >> "$OUT/residual-knobs-d.log"; cat "$OUT/residual-knobs-d.log"
fi
B=$(mktemp) && tar czf "$B" -C "$OUT" . && find "$OUT" -type f -delete && mv "$B" "$OUT/bundle-$STAGE.tgz"
