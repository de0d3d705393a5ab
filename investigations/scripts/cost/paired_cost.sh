#!/usr/bin/env bash
# Capture cost inside one process. One long launch-bound loop
# (launch_loop.py, rates printed per half second) runs throughout; it is left
# untraced, then given a probed setting for PHASE seconds, then untraced
# again, and so on (COST_PHASES names the settings, CYCLES rounds of them).
# Separate processes of the same loop differ by up to 40% on the H200 from
# run to run, so each phase is compared with the untraced phases around it.
#
# Two measures per phase:
#  - the launch rate (median of the half-second windows inside the phase),
#    as a ratio to the untraced phases around it: what the job feels, but
#    the loop's own rate wanders by 10-20% between phases;
#  - the kernel time of the launching thread per launch (stime from
#    /proc/PID/task/PID/stat, sampled by the scheduler tick), less that of
#    the untraced phases around it: the uprobe traps and the BPF programs
#    run in the kernel on the thread's time, so this isolates their cost
#    from the loop's wandering.
# With COST_PIN=CPU (default 3) the loop runs on that CPU and everything
# ingero starts on the others, so that neither moves the other around.
# A last phase, not in the ratios, traces with the kernel's BPF run-time
# statistics on, which give the time each of ingero's programs takes per
# run (paired-bpf-stats.txt). Everything lands in OUT/paired.tar.gz too.
#
# Run as root from the repository root:
#   investigations/scripts/cost/paired_cost.sh OUT_DIR INGERO_BINARY PROBE_FLOOR_BINARY [CYCLES] [PHASE_SECONDS]
. "$(dirname "$0")/../device_setup.sh"
FLOOR=${3:?probe_floor binary}
CYCLES=${4:-2}
PHASE=${5:-7}
PY=$(torch_python "${COST_PYTHON:-}")
export PYTHONUNBUFFERED=1
M="$OUT/paired-phases.txt"
W="$OUT/paired-windows.jsonl"
: > "$M"
# Probed settings (COST_PHASES): floor (do-nothing probe pair on the driver
# launch functions), entry_floor (do-nothing entry probes only),
# session_floor (do-nothing uprobe-session entries that decline the return:
# what sampled timing's untimed launches pay before any work), traced (the
# default capture), traced_nostacks (--stack-hz 0), traced_nopy
# (--no-python-stacks: native stacks only), traced_nooffcpu
# (--no-offcpu-stacks: no stack at each switch-out), traced_launch16
# (--launch-sample 16), traced_launch16_nostacks (the same, --stack-hz 0),
# traced_launch64 and traced_launch64_nostacks (the same with --launch-sample 64), traced_sampled
# (--stack-hz 0 --sample 10: few rows for user space to write), traced_rows1
# (--launch-sample 0 --launch-rows 1: every launch timed, one ring record and
# raw row each), traced_timed (--launch-sample 0: every launch timed, launch
# rows folding the short ones; the default before sampled launch timing).
#
# With COST_NEIGHBOUR=1 the traced phases trace a second copy of the loop
# (pinned to COST_PIN2, default 5) instead: the measured loop is then an
# untraced neighbour of a traced process, and each traced phase also
# records whether each of the two runs the library's original code at
# cuLaunchKernel (code_bytes.py, paired-code-bytes.jsonl).
PHASES=${COST_PHASES:-floor entry_floor traced}
NPH=$(echo $PHASES | wc -w)
PIN=${COST_PIN-3}
NCPU=$(nproc)
if [ -n "$PIN" ]; then
  OTHERS=$(seq 0 $((NCPU - 1)) | grep -vx "$PIN" | paste -sd,)
  LOOP_PIN=(taskset -c "$PIN")
  REST_PIN=(taskset -c "$OTHERS")
else
  LOOP_PIN=()
  REST_PIN=()
fi
# Long enough for every phase, their start-up and stop; killed at the end.
TOTAL=$(( (CYCLES * NPH * 2 + 3) * (PHASE + 3) + 30 ))
"${LOOP_PIN[@]}" env LOOP_PRINT_ADDR=1 "$PY" "$S/cost/launch_loop.py" "$TOTAL" 1000 0.5 > "$W" 2> "$OUT/paired-loop.err" &
P=$!
TARGET=$P
if [ "${COST_NEIGHBOUR:-0}" = 1 ]; then
  taskset -c "${COST_PIN2:-5}" env LOOP_PRINT_ADDR=1 "$PY" "$S/cost/launch_loop.py" "$TOTAL" 1000 0.5 \
    > "$OUT/paired-target.jsonl" 2> "$OUT/paired-target.err" &
  TARGET=$!
fi
# Wait for the steady phase (the first window line).
for _ in $(seq 600); do grep -q window_end_ns "$W" 2>/dev/null && break; sleep 0.1; done
sleep 2
# The library files the loop has mapped.
CUDART=$(grep -o '/[^ ]*libcudart\.so[^ ]*' /proc/$P/maps | head -1)
CUDA=$(grep -o '/[^ ]*libcuda\.so[^ ]*' /proc/$P/maps | head -1)
echo "libraries: $CUDART $CUDA; loop pinned to CPU ${PIN:-none} of $NCPU; CLK_TCK $(getconf CLK_TCK)" >> "$M"
# NAME start|end, the time, the loop thread's user and kernel time in
# clock ticks (fields 14 and 15 of its stat, counted after the name), and its
# voluntary and involuntary context switches.
phase() {
  local cpu sw
  cpu=$(sed 's/^.*) //' /proc/$P/task/$P/stat | awk '{print $12, $13}')
  sw=$(awk '/ctxt_switches/ {printf "%s ", $2}' /proc/$P/task/$P/status)
  echo "$1 $(date +%s%N) $2 $cpu $sw" >> "$M"
}
addr_of() { grep -o '"cuLaunchKernel_addr": [0-9]*' "$1" | head -1 | awk '{print $2}'; }
trace() { # NAME OPTIONS...
  local name=$1; shift
  "${REST_PIN[@]}" "$ING" trace --quiet --no-gpu-samples "$@" --pid "$TARGET" --duration "${PHASE}s" \
    --db "$OUT/paired-$name-$c.db" > "$OUT/paired-$name-$c.out" 2> "$OUT/paired-$name-$c.err" &
  local t=$!
  if [ "$TARGET" != "$P" ]; then
    sleep 2
    "$PY" "$S/cost/code_bytes.py" "$P" "$(addr_of "$W")" "$name neighbour" >> "$OUT/paired-code-bytes.jsonl"
    "$PY" "$S/cost/code_bytes.py" "$TARGET" "$(addr_of "$OUT/paired-target.jsonl")" "$name traced" >> "$OUT/paired-code-bytes.jsonl"
  fi
  wait "$t"
}
for c in $(seq "$CYCLES"); do
  for ph in $PHASES; do
    phase untraced start; sleep "$PHASE"; phase untraced end
    phase "$ph" start
    case $ph in
      floor) "${REST_PIN[@]}" "$FLOOR" "$P" "$CUDA" cuLaunchKernel,cuLaunchKernelEx "$PHASE" pair 2>> "$OUT/paired-floor.err" ;;
      entry_floor) "${REST_PIN[@]}" "$FLOOR" "$P" "$CUDA" cuLaunchKernel,cuLaunchKernelEx "$PHASE" entry 2>> "$OUT/paired-floor.err" ;;
      session_floor) "${REST_PIN[@]}" "$FLOOR" "$P" "$CUDA" cuLaunchKernel,cuLaunchKernelEx "$PHASE" session 2>> "$OUT/paired-floor.err" ;;
      traced) trace traced ;;
      traced_nostacks) trace traced_nostacks --stack-hz 0 ;;
      traced_nopy) trace traced_nopy --no-python-stacks ;;
      traced_nooffcpu) trace traced_nooffcpu --no-offcpu-stacks ;;
      traced_sampled) trace traced_sampled --stack-hz 0 --sample 10 ;;
      traced_launch16) trace traced_launch16 --launch-sample 16 ;;
      traced_rows1) trace traced_rows1 --launch-sample 0 --launch-rows 1 ;;
      traced_timed) trace traced_timed --launch-sample 0 ;;
      traced_launch16_nostacks) trace traced_launch16_nostacks --launch-sample 16 --stack-hz 0 ;;
      traced_launch64) trace traced_launch64 --launch-sample 64 ;;
      traced_launch64_nostacks) trace traced_launch64_nostacks --launch-sample 64 --stack-hz 0 ;;
      *) echo "unknown phase $ph" >&2; exit 2 ;;
    esac
    phase "$ph" end
  done
done
phase untraced start; sleep "$PHASE"; phase untraced end
# Program run time per call, from the kernel's BPF statistics (they add a
# little to every program run, so this phase is left out of the ratios).
STATS=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
echo 1 > /proc/sys/kernel/bpf_stats_enabled
phase stats start
# COST_STATS_ARGS: extra trace options for this phase (e.g. --launch-sample 16).
# shellcheck disable=SC2086
"${REST_PIN[@]}" "$ING" trace --quiet --no-gpu-samples ${COST_STATS_ARGS:-} --pid "$P" --duration "${PHASE}s" --db "$OUT/paired-stats.db" \
  > "$OUT/paired-trace-stats.out" 2> "$OUT/paired-trace-stats.err" &
T=$!
sleep $(( PHASE - 1 ))
for f in /proc/$T/fdinfo/*; do
  grep -q '^prog_tag' "$f" 2>/dev/null || continue
  echo "$(tr '\n' ' ' < "$f")"
done > "$OUT/paired-bpf-stats.txt"
wait $T
phase stats end
echo "$STATS" > /proc/sys/kernel/bpf_stats_enabled
kill "$P" "$TARGET" 2>/dev/null
wait "$P" "$TARGET" 2>/dev/null
"$PY" - "$M" "$W" "$OUT/paired-bpf-stats.txt" <<'PY' | tee "$OUT/paired-summary.txt"
import json, os, re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
print(lines[0])
tck = int(re.search(r"CLK_TCK (\d+)", lines[0]).group(1))
marks = [l.split() for l in lines[1:]]
phases = []
for a, b in zip(marks[::2], marks[1::2]):
    phases.append({"name": a[0], "t0": int(a[1]), "t1": int(b[1]),
                   "sys_ticks": int(b[4]) - int(a[4]), "usr_ticks": int(b[3]) - int(a[3]),
                   "invol": int(b[6]) - int(a[6])})
wins = [json.loads(l) for l in open(sys.argv[2]) if l.startswith('{"window')]
for p in phases:
    # Windows wholly inside the phase, leaving 1 s for the attach to settle.
    w = [x for x in wins if x["window_end_ns"] - x["window_s"] * 1e9 >= p["t0"] + 1e9 and x["window_end_ns"] <= p["t1"] - 0.3e9]
    p["rate"] = statistics.median(x["window_launches"] / x["window_s"] for x in w) if w else None
    # Launches over the whole phase (attach and detach included) for the
    # kernel time per launch, which is counted over the whole phase too.
    a = [x for x in wins if p["t0"] <= x["window_end_ns"] <= p["t1"]]
    n = sum(x["window_launches"] for x in a)
    p["sys_ns"] = p["sys_ticks"] / tck * 1e9 / n if n else None
for p in phases:
    r = f"{p['rate']:9.0f}/s" if p["rate"] else "  (no window)"
    s = f"{p['sys_ns']:6.0f} ns/launch in the kernel" if p["sys_ns"] is not None else ""
    print(f"  {p['name']:16s} {r}  {s}  involuntary switches {p['invol']}")
print("each probed phase against the mean of the untraced phases before and after it:")
out = {}
for i, p in enumerate(phases):
    if p["name"] in ("untraced", "stats") or p["rate"] is None:
        continue
    around = [q for q in phases[max(0, i - 1):i + 2] if q["name"] == "untraced" and q["rate"]]
    if not around:
        continue
    u = statistics.mean(q["rate"] for q in around)
    us = statistics.mean(q["sys_ns"] for q in around)
    row = (p["rate"] / u, 1e9 / p["rate"] - 1e9 / u, p["sys_ns"] - us)
    out.setdefault(p["name"], []).append(row)
    print(f"  {p['name']:16s} ratio {row[0]:.3f}  added {row[1]:6.0f} ns/launch (rate)  {row[2]:6.0f} ns/launch (kernel time)")
summary = {}
for name, v in out.items():
    m = [statistics.median(x[k] for x in v) for k in range(3)]
    summary[name] = m
    print(f"{name}: median ratio {m[0]:.3f}, added {m[1]:.0f} ns/launch by rate, {m[2]:.0f} ns/launch of kernel time ({len(v)} phases)")
if "floor" in summary and "traced" in summary:
    print(f"traced over the floor: {summary['traced'][1] - summary['floor'][1]:.0f} ns/launch by rate, "
          f"{summary['traced'][2] - summary['floor'][2]:.0f} ns/launch of kernel time")
# Programs that ran in the statistics phase: ns per run.
if len(sys.argv) > 3 and os.path.exists(sys.argv[3]):
    for line in open(sys.argv[3]):
        f = dict(re.findall(r"(\w+):\s+(\S+)", line))
        runs = int(f.get("run_cnt", 0))
        if runs > 1000:
            print(f"program {f.get('prog_id')} ({f.get('prog_tag')}): {runs} runs, {int(f['run_time_ns']) / runs:.0f} ns per run")
PY
rm -f "$OUT"/paired-*.db
tar -czf "$OUT/paired.tar.gz" -C "$OUT" $(cd "$OUT" && ls paired-* 2>/dev/null)
