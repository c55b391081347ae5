#!/usr/bin/env bash
# Device calls for issues #3/#4, ninth session of 2026-11-30 (one H200).
#   stage a: rope_half_math.py (rope_rotate_half's per-op rounding against Inductor's kernel), host_profile.py
#            (compile against triton+compile on the host), wrapper_ablation.py on the eighth session's wrappers
#   Every stage packs what it wrote into one archive, bundle-STAGE.tgz (a call brings back at most 8 files).
# Usage (device, repo root): bash docs/perf/h200-2026-11-30j/session.sh a
set -u
STAGE=${1:?a}; P=docs/perf/h200-2026-11-30j
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
fi
B=$(mktemp) && tar czf "$B" -C "$OUT" . && find "$OUT" -type f -delete && mv "$B" "$OUT/bundle-$STAGE.tgz"
