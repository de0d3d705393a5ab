#!/usr/bin/env bash
# What a capture costs on a GPU host, from one run, printed as ratios:
#  1. the traced job: a launch-bound loop (launch_loop.py) untraced, traced,
#     and traced with both launch levels probed throughout
#     (--all-launch-levels), alternating, REPS times each (five captures in a
#     row show whether later captures cost more): launch rate,
#     traced/untraced ratio, ns added per launch;
#  2. everyone else: the same loop, untraced, beside an untraced copy of it
#     and then beside a traced copy (the GPU is shared alike both times);
#  3. start and stop: from invoking `ingero trace -- cmd` to the command's
#     first statement (the capture's own start-up), and from the command's
#     last statement to `ingero` returning (the database closed).
# Run as root from the repository root:
#   investigations/scripts/cost/capture_cost.sh OUT_DIR [INGERO_BINARY] [REPS] [SECONDS]
. "$(dirname "$0")/../device_setup.sh"
REPS=${3:-5}
SECS=${4:-6}
PY=$(torch_python "${COST_PYTHON:-}")
export PYTHONUNBUFFERED=1
L=$S/cost/launch_loop.py
R="$OUT/cost-results.jsonl"
: > "$R"

# run LABEL [trace args...]: one loop, traced when args are given; appends a line.
run() {
  local label=$1; shift
  local t0 t1 line rc
  t0=$(date +%s%N)
  if [ "$#" -gt 0 ]; then
    rm -f "$OUT/cost.db"
    line=$("$ING" trace --quiet "$@" --db "$OUT/cost.db" -- "$PY" "$L" "$SECS" 2> "$OUT/cost-$label.err" | grep '^{')
  else
    line=$("$PY" "$L" "$SECS" 2> "$OUT/cost-$label.err" | grep '^{')
  fi
  rc=$?
  t1=$(date +%s%N)
  [ -n "$line" ] || { echo "{\"label\": \"$label\", \"failed\": true}" >> "$R"; return; }
  echo "${line%\}}, \"label\": \"$label\", \"invoked_ns\": $t0, \"returned_ns\": $t1, \"rc\": $rc}" >> "$R"
}

for i in $(seq "$REPS"); do
  run "untraced-$i"
  run "traced-$i" --no-gpu-samples
  run "bothlevels-$i" --no-gpu-samples --all-launch-levels
done
# Everyone else: B beside an untraced copy A, then B beside a traced A (the
# same GPU sharing both times; only the capture differs).
"$PY" "$L" "$((SECS + 12))" > "$OUT/neighbour-plain-a.out" 2>&1 &
A=$!
sleep 9   # A in its loop before B starts
"$PY" "$L" "$SECS" > "$OUT/neighbour-alone.out" 2>&1
wait $A
"$ING" trace --quiet --no-gpu-samples --db "$OUT/neighbour.db" -- "$PY" "$L" "$((SECS + 12))" \
  > "$OUT/neighbour-traced.out" 2> "$OUT/neighbour-traced.err" &
A=$!
sleep 9   # A's capture attached and A in its loop before B starts
"$PY" "$L" "$SECS" > "$OUT/neighbour-beside.out" 2>&1
wait $A
for f in alone beside traced; do
  grep -h '^{' "$OUT/neighbour-$f.out" | sed "s/}\$/, \"label\": \"neighbour-$f\"}/" >> "$R"
done
rm -f "$OUT/cost.db" "$OUT/neighbour.db"

"$PY" - "$R" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {r["label"]: r for r in rows}
def rate(prefix):
    return [r["launches_per_s"] for r in rows if r["label"].startswith(prefix) and "launches_per_s" in r]
u = rate("untraced-")
for name, prefix in (("traced", "traced-"), ("traced, both launch levels", "bothlevels-")):
    t = rate(prefix)
    print(f"launch loop, launches/s (untraced | {name}):")
    for i, (a, b) in enumerate(zip(u, t), 1):
        print(f"  run {i}: {a:10.0f} | {b:10.0f}  ratio {b / a:.3f}  added {1e9 / b - 1e9 / a:7.0f} ns/launch")
    if u and t:
        mu, mt = statistics.median(u), statistics.median(t)
        print(f"  median: {mu:.0f} | {mt:.0f}  ratio {mt / mu:.3f}  added {1e9 / mt - 1e9 / mu:.0f} ns/launch")
        print(f"  traced runs, last/first rate: {t[-1] / t[0]:.3f} (1.0: later captures cost the same)")
starts = [(r["start_ns"] - r["invoked_ns"]) / 1e6 for r in rows if r["label"].startswith("traced-") and "start_ns" in r]
plain_starts = [(r["start_ns"] - r["invoked_ns"]) / 1e6 for r in rows if r["label"].startswith("untraced-") and "start_ns" in r]
stops = [(r["returned_ns"] - r["end_ns"]) / 1e6 for r in rows if r["label"].startswith("traced-") and "end_ns" in r]
plain_stops = [(r["returned_ns"] - r["end_ns"]) / 1e6 for r in rows if r["label"].startswith("untraced-") and "end_ns" in r]
if starts:
    print(f"start: invocation to the command's first statement, median {statistics.median(starts):.0f} ms traced, {statistics.median(plain_starts):.0f} ms untraced")
    print(f"stop: the command's last statement to the tracer returning, median {statistics.median(stops):.0f} ms traced, {statistics.median(plain_stops):.0f} ms untraced")
a, b = by.get("neighbour-alone"), by.get("neighbour-beside")
if a and b:
    print(f"untraced neighbour: beside an untraced copy {a['launches_per_s']:.0f}/s, beside a traced copy {b['launches_per_s']:.0f}/s, ratio {b['launches_per_s'] / a['launches_per_s']:.3f}, added {1e9 / b['launches_per_s'] - 1e9 / a['launches_per_s']:.0f} ns/launch")
PY
