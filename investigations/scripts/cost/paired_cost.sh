#!/usr/bin/env bash
# Capture cost inside one process: one long launch-bound loop (launch_loop.py,
# rates printed per half second) is left untraced, then given do-nothing
# probe pairs on the launch functions (the floor: the kernel's trap and
# return hijack with no program work; probes/examples/probe_floor.rs), then
# untraced, then traced by `ingero trace --pid`, and so on. Separate
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
TOTAL=$(( (CYCLES * 4 + 1) * PHASE + 4 ))
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
for c in $(seq "$CYCLES"); do
  phase untraced start; sleep "$PHASE"; phase untraced end
  phase floor start
  "$FLOOR" "$P" "$CUDA" cuLaunchKernel,cuLaunchKernelEx "$PHASE" 2>> "$OUT/paired-floor.err"
  phase floor end
  phase untraced start; sleep "$PHASE"; phase untraced end
  phase traced start
  "$ING" trace --quiet --no-gpu-samples --pid "$P" --duration "${PHASE}s" --db "$OUT/paired-$c.db" \
    > "$OUT/paired-trace-$c.out" 2> "$OUT/paired-trace-$c.err"
  phase traced end
done
phase untraced start; sleep "$PHASE"; phase untraced end
wait $P
"$PY" - "$M" "$W" <<'PY'
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
out = {"floor": [], "traced": []}
for i, (name, r) in enumerate(rates):
    if name == "untraced" or r is None:
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
if out["floor"] and out["traced"]:
    print(f"traced over the floor: {statistics.median(y for _, y in out['traced']) - statistics.median(y for _, y in out['floor']):.0f} ns/launch")
PY
