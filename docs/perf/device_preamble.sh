# Sourced by the per-session device scripts (docs/perf/h200-*/session.sh) from the repo root on the device machine:
# installs the carried wheels (.whl/) into a private folder, puts it and the checkout on PYTHONPATH, records the
# GPUs, and defines `stamp NAME RC` (one line: what ran, its exit status, seconds since the start) and `left`
# (seconds left of a LIMIT-second call, default 580).
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; T0=$(date +%s); SITE=$(mktemp -d)
stamp() { echo "$1 rc=$2 at $(( $(date +%s) - T0 )) s"; }
left() { echo $(( ${LIMIT:-580} - ($(date +%s) - T0) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || exit 1
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpus-${STAGE:-x}.log"
echo "cores $(nproc)" >> "$OUT/gpus-${STAGE:-x}.log"
