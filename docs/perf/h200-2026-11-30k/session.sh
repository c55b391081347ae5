#!/usr/bin/env bash
# Device calls for issues #3/#4, tenth session of 2026-11-30 (one H200).
#   stage a: what the ninth session left unrun: the GPU tests of tests/inject and test_cross_attention.py (attn2
#            keeps SDPA under compile since 156c5ed), xattn_compile_probe.py (why Inductor's compilation of the
#            cross_attention kernel ran 3.6x slower), xattn_ab_probe.py eager (the host cost of the final eager
#            injection), then the launch-free e2e plan (plan-e2e-graph-a.jsonl) in what time is left
#   stage b: after a4c1365 (cross_attention casts its fp64 scale; attn2 takes it under compile too): the GPU tests
#            again, xattn_compile_probe.py again, the launch-free and the plain-call e2e plans (plan-e2e-*-b.jsonl)
#   stage c: after the fused projections under compile (fused_linear.ForwardCheck) and the faster intact check:
#            the GPU tests, the launch-free and plain-call e2e plans (plan-e2e-*-c.jsonl), then ab_probe.py
#            (compile against triton+compile, interleaved plain calls)
#   stage d: after cross_attention loads a mask that does not vary over the queries once per program (MASK_ROW):
#            its GPU tests, cross_attn_probe.py (launch configurations), its kernel plan and the launch-free e2e plan
#   stage e: the whole GPU test suite (tests/kernels, tests/inject) at the session's last code
#   Every stage packs what it wrote into one archive, bundle-STAGE.tgz (a call brings back at most 8 files).
# Usage (device, repo root): bash docs/perf/h200-2026-11-30k/session.sh a|b|c|d|e
set -u
STAGE=${1:?a, b, c, d or e}; P=docs/perf/h200-2026-11-30k; J=docs/perf/h200-2026-11-30j
. docs/perf/device_preamble.sh
if [ "$STAGE" = a ]; then
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels/test_cross_attention.py tests/inject \
      > "$OUT/pytest-gpu-a.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-a.log"; tail -n 3 "$OUT/pytest-gpu-a.log"
  mkdir -p "$OUT/xattn-compile"
  timeout 150 python3 $J/xattn_compile_probe.py "$OUT/xattn-compile" > "$OUT/xattn-compile-probe.log" 2>&1
  stamp compile-probe $? >> "$OUT/xattn-compile-probe.log"; tail -n 12 "$OUT/xattn-compile-probe.log"
  timeout 120 python3 $J/xattn_ab_probe.py eager > "$OUT/xattn-ab-probe.log" 2>&1
  stamp ab $? >> "$OUT/xattn-ab-probe.log"; tail -n 8 "$OUT/xattn-ab-probe.log"
  timeout $(left) python3 -m workers run $P/plan-e2e-graph-a.jsonl --out "$OUT/results-e2e-graph-a.jsonl" \
      > "$OUT/e2e-a.log" 2>&1
  stamp "e2e graph" $? >> "$OUT/e2e-a.log"; tail -n 1 "$OUT/e2e-a.log"
elif [ "$STAGE" = b ]; then
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels/test_cross_attention.py tests/inject \
      > "$OUT/pytest-gpu-b.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-b.log"; tail -n 3 "$OUT/pytest-gpu-b.log"
  mkdir -p "$OUT/xattn-compile"
  timeout 100 python3 $J/xattn_compile_probe.py "$OUT/xattn-compile" > "$OUT/xattn-compile-probe-b.log" 2>&1
  stamp compile-probe $? >> "$OUT/xattn-compile-probe-b.log"; head -n 1 "$OUT/xattn-compile-probe-b.log"
  timeout 120 python3 -m workers run $P/plan-e2e-graph-b.jsonl --out "$OUT/results-e2e-graph-b.jsonl" \
      > "$OUT/e2e-b.log" 2>&1
  stamp "e2e graph" $? >> "$OUT/e2e-b.log"; tail -n 1 "$OUT/e2e-b.log"
  timeout $(left) python3 -m workers run $P/plan-e2e-host-b.jsonl --out "$OUT/results-e2e-host-b.jsonl" \
      >> "$OUT/e2e-b.log" 2>&1
  stamp "e2e host" $? >> "$OUT/e2e-b.log"; tail -n 1 "$OUT/e2e-b.log"
elif [ "$STAGE" = c ]; then
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels/test_cross_attention.py tests/inject \
      > "$OUT/pytest-gpu-c.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-c.log"; tail -n 3 "$OUT/pytest-gpu-c.log"
  timeout 120 python3 -m workers run $P/plan-e2e-graph-c.jsonl --out "$OUT/results-e2e-graph-c.jsonl" \
      > "$OUT/e2e-c.log" 2>&1
  stamp "e2e graph" $? >> "$OUT/e2e-c.log"; tail -n 1 "$OUT/e2e-c.log"
  timeout 200 python3 -m workers run $P/plan-e2e-host-c.jsonl --out "$OUT/results-e2e-host-c.jsonl" \
      >> "$OUT/e2e-c.log" 2>&1
  stamp "e2e host" $? >> "$OUT/e2e-c.log"; tail -n 1 "$OUT/e2e-c.log"
  timeout $(left) python3 docs/perf/h200-2026-11-30i/ab_probe.py > "$OUT/ab-probe-c.log" 2>&1
  stamp ab $? >> "$OUT/ab-probe-c.log"; tail -n 12 "$OUT/ab-probe-c.log"
elif [ "$STAGE" = d ]; then
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels/test_cross_attention.py \
      > "$OUT/pytest-gpu-d.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-d.log"; tail -n 3 "$OUT/pytest-gpu-d.log"
  timeout 120 python3 $J/cross_attn_probe.py > "$OUT/cross-attn-probe-d.log" 2>&1
  stamp probe $? >> "$OUT/cross-attn-probe-d.log"; grep "kernel" "$OUT/cross-attn-probe-d.log"
  timeout 150 python3 -m workers run $P/plan-kernels-xattn-d.jsonl --out "$OUT/results-kernels-xattn-d.jsonl" \
      > "$OUT/kernels-d.log" 2>&1
  stamp kernels $? >> "$OUT/kernels-d.log"; tail -n 1 "$OUT/kernels-d.log"
  timeout $(left) python3 -m workers run $P/plan-e2e-graph-d.jsonl --out "$OUT/results-e2e-graph-d.jsonl" \
      > "$OUT/e2e-d.log" 2>&1
  stamp "e2e graph" $? >> "$OUT/e2e-d.log"; tail -n 1 "$OUT/e2e-d.log"
elif [ "$STAGE" = e ]; then
  timeout $(left) python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels tests/inject > "$OUT/pytest-gpu-e.log" 2>&1
  stamp pytest $? >> "$OUT/pytest-gpu-e.log"; tail -n 4 "$OUT/pytest-gpu-e.log"
fi
B=$(mktemp) && tar czf "$B" -C "$OUT" . && find "$OUT" -type f -delete && mv "$B" "$OUT/bundle-$STAGE.tgz"
