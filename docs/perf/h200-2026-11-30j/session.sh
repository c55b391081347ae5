#!/usr/bin/env bash
# Device calls for issues #3/#4, ninth session of 2026-11-30 (one H200).
#   stage a: rope_half_math.py (rope_rotate_half's per-op rounding against Inductor's kernel), host_profile.py
#            (compile against triton+compile on the host), wrapper_ablation.py on the eighth session's wrappers
#   stage b: after 22d2cde (rope_rotate_half's native half math, the addmm_gelu_tanh op under compile): the GPU tests
#            of tests/kernels/test_rope.py and tests/inject, the rope_rotate_half kernel plan, ab_probe.py (compile
#            against triton+compile interleaved) and host_profile.py
#   stage c: the e2e plans, plain calls (plan-e2e-host.jsonl) and launch-free (plan-e2e-graph.jsonl)
#   stage e: after the cross_attention kernel and its injection: the GPU tests of test_cross_attention.py and
#            tests/inject, the cross_attention kernel plan, the launch-free e2e plan (plan-e2e-graph-e.jsonl),
#            xattn_ab_probe.py, then the plain-call plan (plan-e2e-host-e.jsonl) in what time is left
#   Every stage packs what it wrote into one archive, bundle-STAGE.tgz (a call brings back at most 8 files).
# Usage (device, repo root): bash docs/perf/h200-2026-11-30j/session.sh a|b|c|e
set -u
STAGE=${1:?a, b, c or e}; P=docs/perf/h200-2026-11-30j
. docs/perf/device_preamble.sh
if [ "$STAGE" = a ]; then
  timeout 200 python3 $P/rope_half_math.py "$OUT" > "$OUT/rope-half-math.log" 2>&1
  stamp rope $? >> "$OUT/rope-half-math.log"; tail -n 1 "$OUT/rope-half-math.log"
  timeout 200 python3 $P/host_profile.py > "$OUT/host-profile.log" 2>&1
  stamp host $? >> "$OUT/host-profile.log"; tail -n 1 "$OUT/host-profile.log"
  timeout $(left) python3 docs/perf/h200-2026-11-30i/wrapper_ablation.py \
      docs/perf/h200-2026-11-30i/b/output-code-compile-0.py.gz \
      docs/perf/h200-2026-11-30i/d/output-code-triton-compile-0.py.gz > "$OUT/wrapper-ablation-d.log" 2>&1
  stamp ablation $? >> "$OUT/wrapper-ablation-d.log"; tail -n 1 "$OUT/wrapper-ablation-d.log"
elif [ "$STAGE" = b ]; then
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels/test_rope.py tests/inject \
      > "$OUT/pytest-gpu-b.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-b.log"; tail -n 3 "$OUT/pytest-gpu-b.log"
  timeout 150 python3 -m workers run $P/plan-kernels-rope-half.jsonl --out "$OUT/results-kernels-rope-half.jsonl" \
      > "$OUT/kernels-b.log" 2>&1
  stamp kernels $? >> "$OUT/kernels-b.log"; tail -n 1 "$OUT/kernels-b.log"
  timeout 120 python3 docs/perf/h200-2026-11-30i/ab_probe.py > "$OUT/ab-probe-b.log" 2>&1
  stamp ab $? >> "$OUT/ab-probe-b.log"; tail -n 1 "$OUT/ab-probe-b.log"
  timeout $(left) python3 $P/host_profile.py > "$OUT/host-profile-b.log" 2>&1
  stamp host $? >> "$OUT/host-profile-b.log"; tail -n 1 "$OUT/host-profile-b.log"
elif [ "$STAGE" = c ]; then
  timeout 330 python3 -m workers run $P/plan-e2e-host.jsonl --out "$OUT/results-e2e-host-c.jsonl" > "$OUT/e2e-c.log" 2>&1
  stamp "e2e host" $? >> "$OUT/e2e-c.log"; tail -n 1 "$OUT/e2e-c.log"
  timeout $(left) python3 -m workers run $P/plan-e2e-graph.jsonl --out "$OUT/results-e2e-graph-c.jsonl" \
      >> "$OUT/e2e-c.log" 2>&1
  stamp "e2e graph" $? >> "$OUT/e2e-c.log"; tail -n 1 "$OUT/e2e-c.log"
elif [ "$STAGE" = e ]; then
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels/test_cross_attention.py tests/inject \
      > "$OUT/pytest-gpu-e.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-e.log"; tail -n 3 "$OUT/pytest-gpu-e.log"
  timeout 90 python3 -m workers run $P/plan-kernels-xattn.jsonl --out "$OUT/results-kernels-xattn.jsonl" \
      > "$OUT/kernels-e.log" 2>&1
  stamp kernels $? >> "$OUT/kernels-e.log"; tail -n 1 "$OUT/kernels-e.log"
  timeout 120 python3 -m workers run $P/plan-e2e-graph-e.jsonl --out "$OUT/results-e2e-graph-e.jsonl" \
      > "$OUT/e2e-e.log" 2>&1
  stamp "e2e graph" $? >> "$OUT/e2e-e.log"; tail -n 1 "$OUT/e2e-e.log"
  timeout 120 python3 $P/xattn_ab_probe.py > "$OUT/xattn-ab-probe.log" 2>&1
  stamp ab $? >> "$OUT/xattn-ab-probe.log"; tail -n 1 "$OUT/xattn-ab-probe.log"
  timeout $(left) python3 -m workers run $P/plan-e2e-host-e.jsonl --out "$OUT/results-e2e-host-e.jsonl" \
      >> "$OUT/e2e-e.log" 2>&1
  stamp "e2e host" $? >> "$OUT/e2e-e.log"; tail -n 1 "$OUT/e2e-e.log"
fi
B=$(mktemp) && tar czf "$B" -C "$OUT" . && find "$OUT" -type f -delete && mv "$B" "$OUT/bundle-$STAGE.tgz"
