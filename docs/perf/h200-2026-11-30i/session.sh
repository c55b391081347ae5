#!/usr/bin/env bash
# Device calls for issues #3/#4, eighth session of 2026-11-30 (one H200).
#   stage a: the GPU tests of tests/inject and tests/workers (the seventh session's review commit and the clock log
#            had run on no GPU), then the e2e plan PLAN_DIR/plan-e2e-graph.jsonl (the job logs the SM clock itself)
#   stage b: compile_host_probe.py (where the host time of a compiled forward goes, compile against
#            triton+compile), then PLAN_DIR/plan-e2e-host.jsonl
#   stage c: after the launch changes (compile_options' static launch of our kernels under Inductor, linear_gelu as a
#            plain library op): the GPU tests of tests/inject, compile_host_probe.py again, then
#            PLAN_DIR/plan-e2e-host-c.jsonl
#   stage d: stage c again after the modulation rows' stack under compile (plan-e2e-host-d.jsonl), then
#            PLAN_DIR/plan-e2e-graph-d.jsonl
#   Every stage packs what it wrote into one archive, bundle-STAGE.tgz (a call brings back at most 8 files).
# Usage (device, repo root): bash docs/perf/h200-2026-11-30i/session.sh a|b|c|d [PLAN_DIR]
set -u
STAGE=${1:?a, b, c or d}; D=${2:-docs/perf/h200-2026-11-30i}; P=docs/perf/h200-2026-11-30i
. docs/perf/device_preamble.sh
if [ "$STAGE" = a ]; then
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/inject tests/workers \
      > "$OUT/pytest-gpu-a.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-a.log"; tail -n 3 "$OUT/pytest-gpu-a.log"
  timeout $(left) python3 -m workers run $D/plan-e2e-graph.jsonl --out "$OUT/results-e2e-graph-a.jsonl" \
      > "$OUT/e2e-a.log" 2>&1
  stamp "e2e graph" $? >> "$OUT/e2e-a.log"; tail -n 1 "$OUT/e2e-a.log"
elif [ "$STAGE" = c ] || [ "$STAGE" = d ]; then
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/inject > "$OUT/pytest-gpu-$STAGE.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-$STAGE.log"; tail -n 3 "$OUT/pytest-gpu-$STAGE.log"
  timeout 100 python3 $P/compile_host_probe.py "$OUT" > "$OUT/compile-host-probe-$STAGE.log" 2>&1
  stamp probe $? >> "$OUT/compile-host-probe-$STAGE.log"; tail -n 1 "$OUT/compile-host-probe-$STAGE.log"
  timeout $(left) python3 -m workers run $D/plan-e2e-host-$STAGE.jsonl --out "$OUT/results-e2e-host-$STAGE.jsonl" \
      > "$OUT/e2e-$STAGE.log" 2>&1
  stamp "e2e host" $? >> "$OUT/e2e-$STAGE.log"; tail -n 1 "$OUT/e2e-$STAGE.log"
  if [ -f $D/plan-e2e-graph-$STAGE.jsonl ]; then
    timeout $(left) python3 -m workers run $D/plan-e2e-graph-$STAGE.jsonl \
        --out "$OUT/results-e2e-graph-$STAGE.jsonl" >> "$OUT/e2e-$STAGE.log" 2>&1
    stamp "e2e graph" $? >> "$OUT/e2e-$STAGE.log"; tail -n 1 "$OUT/e2e-$STAGE.log"
  fi
else
  timeout 300 python3 $P/compile_host_probe.py "$OUT" > "$OUT/compile-host-probe.log" 2>&1
  stamp probe $? >> "$OUT/compile-host-probe.log"; tail -n 1 "$OUT/compile-host-probe.log"
  timeout $(left) python3 -m workers run $D/plan-e2e-host.jsonl --out "$OUT/results-e2e-host-b.jsonl" \
      > "$OUT/e2e-b.log" 2>&1
  stamp "e2e host" $? >> "$OUT/e2e-b.log"; tail -n 1 "$OUT/e2e-b.log"
fi
B=$(mktemp) && tar czf "$B" -C "$OUT" . && find "$OUT" -type f -delete && mv "$B" "$OUT/bundle-$STAGE.tgz"
