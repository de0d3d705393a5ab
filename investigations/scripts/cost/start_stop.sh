#!/usr/bin/env bash
# Start and stop of a capture as a user sees them, RUNS times each, traced
# and untraced: `python -c "print(time.time_ns())"` under `ingero trace`.
#  - start: from invoking ingero to the command's printed time (the first
#    statement after the interpreter is up; untraced, the interpreter's own
#    start);
#  - stop: from that printed time to ingero returning, the database closed.
# Prints the medians.
# Run as root from the repository root:
#   investigations/scripts/cost/start_stop.sh OUT_DIR INGERO_BINARY [RUNS]
# COST_TRACE_ARGS: extra trace options (e.g. --launch-sample 16).
# COST_GPU_SAMPLES=1: keep the GPU sampler on (the default capture); without
# it the capture runs with --no-gpu-samples. Each run's phase log
# (INGERO_LOG=ingero_probes=debug) is kept in OUT/ss-N.err.
. "$(dirname "$0")/../device_setup.sh"
RUNS=${3:-5}
PY=$(torch_python "${COST_PYTHON:-}")
R="$OUT/start-stop.txt"
GPU_ARG=--no-gpu-samples
[ "${COST_GPU_SAMPLES:-0}" = 1 ] && GPU_ARG=
: > "$R"
for i in $(seq "$RUNS"); do
  t0=$(date +%s%N); p=$("$PY" -c "import time; print(time.time_ns())"); t1=$(date +%s%N)
  echo "untraced $i $((p - t0)) $((t1 - p))" >> "$R"
  rm -f "$OUT/ss.db"
  t0=$(date +%s%N)
  # The command's line is the only all-digit one (ingero prints its summary too).
  # shellcheck disable=SC2086
  p=$(INGERO_LOG=ingero_probes=debug "$ING" trace --quiet $GPU_ARG ${COST_TRACE_ARGS:-} --db "$OUT/ss.db" -- "$PY" -c "import time; print(time.time_ns())" \
    2> "$OUT/ss-$i.err" | grep -E '^[0-9]+$' | tail -1)
  t1=$(date +%s%N)
  echo "traced $i $((p - t0)) $((t1 - p))" >> "$R"
done
rm -f "$OUT/ss.db"
"$PY" - "$R" <<'PY' | tee "$OUT/start-stop-summary.txt"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for kind in ("untraced", "traced"):
    s = [int(r[2]) / 1e6 for r in rows if r[0] == kind]
    e = [int(r[3]) / 1e6 for r in rows if r[0] == kind]
    print(f"{kind}: start median {statistics.median(s):.0f} ms (runs {', '.join(f'{x:.0f}' for x in s)}); "
          f"stop median {statistics.median(e):.0f} ms (runs {', '.join(f'{x:.0f}' for x in e)})")
PY
