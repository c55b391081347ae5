#!/usr/bin/env bash
# Device calls for issues #3/#4, sixth session of 2026-11-30 (nvidia-h200: one H200, 16 cores).
#   stage a: the e2e plans in PLAN_DIR: plan-e2e-host.jsonl (the default modes, plain calls), then
#            plan-e2e-graph.jsonl (eager and the +graph modes)
#   stage b: ff_probe.py (the linear_gelu rewrite; idle time inside a graphed forward), the GPU tests, then
#            PLAN_DIR/plan-e2e-host.jsonl
#   stage c: the injected-model compile tests (their expected op set gained linear_gelu_tanh after stage b), then
#            PLAN_DIR/plan-e2e-graph.jsonl, then PLAN_DIR/plan-e2e-host.jsonl again (time left permitting)
#   stage d: ff_probe.py, the GPU tests of qk_norm_rope, the injected-model compile tests and the graph modes, then
#            PLAN_DIR/plan-e2e-graph.jsonl (after the shared rope tables)
#   stage e: the GPU tests of tests/inject (linear_gelu in FLUX and SD3, compiled whole models)
# Usage (device, repo root): bash docs/perf/h200-2026-11-30g/session.sh a|b|c|d|e [PLAN_DIR]
set -u
STAGE=${1:?a, b, c, d or e}; D=${2:-docs/perf/h200-2026-11-30g}; P=docs/perf/h200-2026-11-30g
. docs/perf/device_preamble.sh  # wheels, PYTHONPATH, the GPU list, stamp, left
e2e() {  # $1: plan (host or graph), $2: tag
  timeout $(left) python3 -m workers run $D/plan-e2e-$1.jsonl --out "$OUT/results-e2e-$2.jsonl" >> "$OUT/e2e-$STAGE.log" 2>&1
  stamp "e2e $2" $? >> "$OUT/e2e-$STAGE.log"
}
if [ "$STAGE" = a ]; then
  e2e host host-a; e2e graph graph-a
elif [ "$STAGE" = b ]; then
  timeout 120 python3 $P/ff_probe.py > "$OUT/ff-probe.log" 2>&1
  stamp probe $? >> "$OUT/ff-probe.log"
  timeout 250 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels tests/inject tests/workers \
      > "$OUT/pytest-gpu-b.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-b.log"
  tail -n 3 "$OUT/pytest-gpu-b.log"; grep -h "rc=" "$OUT/ff-probe.log"
  e2e host host-b
elif [ "$STAGE" = e ]; then
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/inject > "$OUT/pytest-gpu-e.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-e.log"
  tail -n 5 "$OUT/pytest-gpu-e.log"; exit 0
elif [ "$STAGE" = d ]; then
  timeout 100 python3 $P/ff_probe.py > "$OUT/ff-probe-d.log" 2>&1
  stamp probe $? >> "$OUT/ff-probe-d.log"
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels/test_qk_norm_rope.py \
      tests/inject/test_compile_gpu.py tests/workers/test_e2e_graph.py > "$OUT/pytest-gpu-d.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-d.log"
  tail -n 3 "$OUT/pytest-gpu-d.log"; grep -h "rc=" "$OUT/ff-probe-d.log"
  e2e graph graph-d
else
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/inject/test_compile_gpu.py \
      > "$OUT/pytest-gpu-c.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-c.log"
  tail -n 3 "$OUT/pytest-gpu-c.log"
  e2e graph graph-c; e2e host host-c
fi
grep -h "rc=" "$OUT/e2e-$STAGE.log"
