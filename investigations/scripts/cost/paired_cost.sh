#!/usr/bin/env bash
# Capture cost inside one process: one long launch-bound loop (launch_loop.py,
# rates printed per half second) is left untraced, then given do-nothing
# probe pairs on the launch functions (the floor: the kernel's trap and
# return hijack with no program work; probes/examples/probe_floor.rs), then
# untraced, then do-nothing entry probes alone (the floor of a design that
# skips the return probe), untraced, then traced by `ingero trace --pid`,
# and so on. A last phase, not in the ratios, traces with the kernel's BPF
# run-time statistics on, which give the time ingero's programs themselves
# take per call (paired-bpf-stats.txt). Separate
# processes of the same loop differ by up to 40% on the H200 from run to
# run; phases of one process do not, so each phase is compared with the
# untraced phases around it.
# Run as root from the repository root:
#   investigations/scripts/cost/paired_cost.sh OUT_DIR INGERO_BINARY PROBE_FLOOR_BINARY [CYCLES] [PHASE_SECONDS]
. "$(dirname "$0")/../device_setup.sh"
FLOOR=${3:?probe_floor binary}
CYCLES=${4:-2}
PHASE=${5:-7}
PY=${COST_PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$PY" ] || PY=python3
export PYTHONUNBUFFERED=1
M="$OUT/paired-phases.txt"
W="$OUT/paired-windows.jsonl"
: > "$M"
# Probed phases of each cycle, each after an untraced one (COST_PHASES to
# choose): floor (do-nothing pair), entry_floor (do-nothing entry only),
# traced (the default capture), traced_nostacks (--stack-hz 0),
# traced_sampled (--stack-hz 0 --sample 10: few rows for user space to write).
PHASES=${COST_PHASES:-floor entry_floor traced}
NPH=$(echo $PHASES | wc -w)
TOTAL=$(( (CYCLES * NPH * 2 + 2) * PHASE + 4 ))
"$PY" "$S/cost/launch_loop.py" "$TOTAL" 1000 0.5 > "$W" 2> "$OUT/paired-loop.err" &
P=$!
# Wait for the steady phase (the first window line).
for _ in $(seq 600); do grep -q window_end_ns "$W" 2>/dev/null && break; sleep 0.1; done
sleep 2
# The library files the loop has mapped.
CUDART=$(grep -o '/[^ ]*libcudart\.so[^ ]*' /proc/$P/maps | head -1)
CUDA=$(grep -o '/[^ ]*libcuda\.so[^ ]*' /proc/$P/maps | head -1)
echo "libraries: $CUDART $CUDA" >> "$M"
phase() { echo "$1 $(date +%s%N) $2" >> "$M"; }
trace() { # NAME OPTIONS...
  local name=$1; shift
  "$ING" trace --quiet --no-gpu-samples "$@" --pid "$P" --duration "${PHASE}s" --db "$OUT/paired-$name-$c.db" \
    > "$OUT/paired-$name-$c.out" 2> "$OUT/paired-$name-$c.err"
}
for c in $(seq "$CYCLES"); do
  for ph in $PHASES; do
    phase untraced start; sleep "$PHASE"; phase untraced end
    phase "$ph" start
    case $ph in
      floor) "$FLOOR" "$P" "$CUDA" cuLaunchKernel,cuLaunchKernelEx "$PHASE" pair 2>> "$OUT/paired-floor.err" ;;
      entry_floor) "$FLOOR" "$P" "$CUDA" cuLaunchKernel,cuLaunchKernelEx "$PHASE" entry 2>> "$OUT/paired-floor.err" ;;
      traced) trace traced ;;
      traced_nostacks) trace traced_nostacks --stack-hz 0 ;;
      traced_sampled) trace traced_sampled --stack-hz 0 --sample 10 ;;
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
"$ING" trace --quiet --no-gpu-samples --pid "$P" --duration "${PHASE}s" --db "$OUT/paired-stats.db" \
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
wait $P
"$PY" - "$M" "$W" "$OUT/paired-bpf-stats.txt" <<'PY'
import json, statistics, sys
marks = [l.split() for l in open(sys.argv[1]) if not l.startswith("libraries")]
print(open(sys.argv[1]).readline().strip())
phases = []
for (name, t0, _), (_, t1, _) in zip(marks[::2], marks[1::2]):
    phases.append((name, int(t0), int(t1)))
wins = [json.loads(l) for l in open(sys.argv[2]) if l.startswith('{"window')]
def rate(t0, t1):
    # Windows wholly inside the phase, leaving 1 s for attach/detach to settle.
    w = [x for x in wins if x["window_end_ns"] - x["window_s"] * 1e9 >= t0 + 1e9 and x["window_end_ns"] <= t1 - 0.3e9]
    n, s = sum(x["window_launches"] for x in w), sum(x["window_s"] for x in w)
    return n / s if s else None
rates = [(name, rate(t0, t1)) for name, t0, t1 in phases]
for name, r in rates:
    print(f"  {name:9s} {r:10.0f} launches/s" if r else f"  {name:9s} (no window)")
print("each probed phase against the mean of the untraced phases before and after it:")
out = {n: [] for n, _ in rates if n not in ("untraced", "stats")}
for i, (name, r) in enumerate(rates):
    if name not in out or r is None:
        continue
    around = [rr for nn, rr in rates[max(0, i - 1):i + 2] if nn == "untraced" and rr]
    if not around:
        continue
    u = statistics.mean(around)
    out[name].append((r / u, 1e9 / r - 1e9 / u))
    print(f"  {name:9s} ratio {r / u:.3f}  added {1e9 / r - 1e9 / u:6.0f} ns/launch")
for name, v in out.items():
    if v:
        print(f"{name}: median ratio {statistics.median(x for x, _ in v):.3f}, added {statistics.median(y for _, y in v):.0f} ns/launch")
if out.get("floor") and out.get("traced"):
    print(f"traced over the floor: {statistics.median(y for _, y in out['traced']) - statistics.median(y for _, y in out['floor']):.0f} ns/launch")
# Programs that ran in the statistics phase: ns per run.
import re
for line in open(sys.argv[3]) if len(sys.argv) > 3 else []:
    f = dict(re.findall(r"(\w+):\s+(\S+)", line))
    runs = int(f.get("run_cnt", 0))
    if runs > 1000:
        print(f"program {f.get('prog_id')} ({f.get('prog_tag')}): {runs} runs, {int(f['run_time_ns']) / runs:.0f} ns per run")
PY
rm -f "$OUT"/paired-*.db
