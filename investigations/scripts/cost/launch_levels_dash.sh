#!/usr/bin/env bash
# The launch loop started the way a user starts a capture (`ingero trace --
# python ...`: the runtime is mapped after the capture began), pinned to one
# CPU, alternating REPS times: untraced, traced (default), traced with
# --all-launch-levels. Prints each rep's launch rates and the median ratios.
# Run as root from the repository root:
#   investigations/scripts/cost/launch_levels_dash.sh OUT_DIR [INGERO_BINARY] [REPS] [SECONDS] [CPU]
. "$(dirname "$0")/../device_setup.sh"
REPS=${3:-5}
SECS=${4:-7}
CPU=${5:-5}
PY=$(torch_python "${COST_PYTHON:-}")
L=$S/cost/launch_loop.py
R="$OUT/launch-levels-dash.txt"
: > "$R"
rate() { grep '^{' | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["launches_per_s"])'; }
for i in $(seq "$REPS"); do
  u=$(taskset -c "$CPU" "$PY" "$L" "$SECS" 2> /dev/null | rate)
  rm -f "$OUT/dash.db"
  t=$("$ING" trace --quiet --no-gpu-samples --db "$OUT/dash.db" -- taskset -c "$CPU" "$PY" "$L" "$SECS" 2> /dev/null | rate)
  rm -f "$OUT/dash.db"
  b=$("$ING" trace --quiet --no-gpu-samples --all-launch-levels --db "$OUT/dash.db" -- taskset -c "$CPU" "$PY" "$L" "$SECS" 2> /dev/null | rate)
  rm -f "$OUT/dash.db"
  echo "rep $i untraced $u default $t both $b" | tee -a "$R"
done
"$PY" - "$R" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
u = [float(r[3]) for r in rows]
for name, col in (("default", 5), ("both levels", 7)):
    x = [float(r[col]) for r in rows]
    ratios = [a / c for a, c in zip(x, u)]
    print(f"{name}: ratios {[round(r, 3) for r in ratios]}, median ratio {st.median(ratios):.3f}, "
          f"added {1e9 / st.median(x) - 1e9 / st.median(u):.0f} ns/launch "
          f"(median rates {st.median(u):.0f} untraced, {st.median(x):.0f} traced)")
PY
