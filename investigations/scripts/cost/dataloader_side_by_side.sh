#!/usr/bin/env bash
# Capture cost on the seed benchmark's DataLoader phase, measured side by
# side. On the device machines one copy of the epoch wanders by 15-30% from
# one epoch to the next with no capture at all (the whole wander is the main
# thread's own time on a CPU: no waiting, no steal), far more than the 1%
# to be shown, and epochs in turn (dataloader_cost.sh) cannot separate the
# two. Here two copies of dataloader_epochs.py, A and B, run each epoch at
# the same time, so whatever slows the machine slows both; each round
# traces one of them (`ingero trace --pid`, attached before the round's
# epochs start, stopped after both end) or neither:
#   for each capture variant: A traced, then B traced; then a round with
#   neither traced (the null rounds, which show the method's own spread).
# Per round, d = log(traced epoch / untraced epoch). Any lasting difference
# between the copies enters the A-traced rounds with one sign and the
# B-traced ones with the other, so the cost is the mean of the two sides'
# means, exp'd; its 95% interval comes from the rounds' spread (bootstrap
# over rounds, each side resampled apart). The null rounds give log(A/B)
# with neither traced: their spread is the noise a single round carries.
#
# Run as root from the repository root:
#   investigations/scripts/cost/dataloader_side_by_side.sh OUT_DIR INGERO_BINARY [ROUNDS] [SAMPLES]
# COST_VARIANTS: captures to compare, ';'-separated ("-" = the default
#   capture), e.g. "-;--no-python-stacks;--stack-hz 0".
# COST_TRACE_ARGS: options given to every capture (default --no-gpu-samples,
#   as in dataloader_cost.sh; set it empty to sample the GPU too).
# COST_PIN_A / COST_PIN_B: CPU lists to pin the copies to (default: free);
#   COST_PIN_ING: the same for the captures.
. "$(dirname "$0")/../device_setup.sh"
ROUNDS=${3:-30}
SAMPLES=${4:-500000}
PY=$(torch_python "${COST_PYTHON:-}")
export PYTHONUNBUFFERED=1
TRACE_ARGS=${COST_TRACE_ARGS---no-gpu-samples}
IFS=';' read -r -a VARIANTS <<< "${COST_VARIANTS:--}"
R="$OUT/side-rounds.jsonl"
: > "$R"

declare -A PID EPOCHS FD
start_copy() { # name, pin
  local name=$1 pin=$2
  mkfifo "$OUT/$name.fifo"
  local run=("$PY" "$S/cost/dataloader_epochs.py" "$SAMPLES")
  [ -n "$pin" ] && run=(taskset -c "$pin" "${run[@]}")
  "${run[@]}" < "$OUT/$name.fifo" > "$OUT/side-$name.jsonl" 2> "$OUT/side-$name.err" &
  PID[$name]=$!
  EPOCHS[$name]=0
}
start_copy A "${COST_PIN_A:-}"
start_copy B "${COST_PIN_B:-}"
exec 3> "$OUT/A.fifo" 4> "$OUT/B.fifo"
FD[A]=3
FD[B]=4
for name in A B; do
  for _ in $(seq 1800); do grep -q ready "$OUT/side-$name.jsonl" 2>/dev/null && break; sleep 0.1; done
  grep -q ready "$OUT/side-$name.jsonl" || { echo "copy $name did not start: $(tail -3 "$OUT/side-$name.err")" >&2; exit 3; }
done
# Both copies run one epoch at the same time; returns when both printed it.
both_epochs() {
  echo go >&3
  echo go >&4
  EPOCHS[A]=$((EPOCHS[A] + 1))
  EPOCHS[B]=$((EPOCHS[B] + 1))
  for _ in $(seq 6000); do
    [ "$(grep -c '"epoch"' "$OUT/side-A.jsonl")" -ge "${EPOCHS[A]}" ] &&
      [ "$(grep -c '"epoch"' "$OUT/side-B.jsonl")" -ge "${EPOCHS[B]}" ] && return 0
    sleep 0.05
  done
  echo "round epochs did not finish" >&2
  exit 3
}
# One warm-up round, not counted (first-epoch allocations).
both_epochs
PLAN=()
for v in "${VARIANTS[@]}"; do PLAN+=("A|$v" "B|$v"); done
PLAN+=("-|")
for r in $(seq "$ROUNDS"); do
  slot=${PLAN[$(((r - 1) % ${#PLAN[@]}))]}
  target=${slot%%|*}
  v=${slot#*|}
  [ "$v" = "-" ] && v=""
  ok=1
  if [ "$target" != "-" ]; then
    log="$OUT/side-trace-$r.err"
    # shellcheck disable=SC2086
    pin_ing=()
    [ -n "${COST_PIN_ING:-}" ] && pin_ing=(taskset -c "$COST_PIN_ING")
    INGERO_LOG=ingero_probes=debug "${pin_ing[@]}" "$ING" trace --quiet $TRACE_ARGS $v --pid "${PID[$target]}" --duration 600s \
      --db "$OUT/side-$r.db" > "$OUT/side-trace-$r.out" 2> "$log" &
    T=$!
    # The capture is in place once it logs its last start step.
    for _ in $(seq 200); do grep -q "command released" "$log" 2>/dev/null && break; kill -0 $T 2>/dev/null || break; sleep 0.05; done
    grep -q "command released" "$log" || ok=0
    both_epochs
    kill -0 $T 2>/dev/null || ok=0
    cpu=$(sed 's/^.*) //' /proc/$T/stat 2>/dev/null | awk '{print $12 + $13}')
    kill -INT $T 2>/dev/null
    wait $T || ok=0
  else
    cpu=0
    both_epochs
  fi
  a=$(grep '"epoch"' "$OUT/side-A.jsonl" | tail -1)
  b=$(grep '"epoch"' "$OUT/side-B.jsonl" | tail -1)
  printf '{"round": %d, "traced": "%s", "variant": "%s", "ok": %d, "ingero_ticks": %s, "A": %s, "B": %s}\n' \
    "$r" "$target" "${v:--}" "$ok" "${cpu:-0}" "$a" "$b" >> "$R"
  rm -f "$OUT/side-$r.db" "$OUT/side-$r.db-wal" "$OUT/side-$r.db-shm"
done
exec 3>&- 4>&-
wait "${PID[A]}" "${PID[B]}"
"$PY" "$S/cost/side_by_side_summary.py" "$R" | tee "$OUT/side-summary.txt"
rm -f "$OUT/A.fifo" "$OUT/B.fifo"
