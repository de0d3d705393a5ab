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
# With COST_COPIES=K each side is K copies (K pairs), and d is the mean over
# the pairs, which narrows the interval for the same device time.
#
# Run as root from the repository root:
#   investigations/scripts/cost/dataloader_side_by_side.sh OUT_DIR INGERO_BINARY [ROUNDS] [SAMPLES]
# COST_VARIANTS: captures to compare, ';'-separated ("-" = the default
#   capture), e.g. "-;--no-python-stacks;--stack-hz 0".
# COST_TRACE_ARGS: options given to every capture (default --no-gpu-samples,
#   as in dataloader_cost.sh; set it empty to sample the GPU too).
# COST_COPIES: copies per side (default 1), see below.
# COST_UNTIL: seconds after which no further round starts (default: none).
# COST_PIN_A / COST_PIN_B: CPU lists to pin the copies to (default: free);
#   with several copies, one CPU per copy, comma-separated (copy i of A and
#   copy i of B best on the two threads of one core); COST_PIN_ING: the CPUs
#   of the captures.
. "$(dirname "$0")/../device_setup.sh"
ROUNDS=${3:-30}
SAMPLES=${4:-500000}
COPIES=${COST_COPIES:-1}
# COST_UNTIL: no round starts after this many seconds from here (0: none).
UNTIL=$((${COST_UNTIL:-0} > 0 ? $(date +%s) + ${COST_UNTIL:-0} : 0))
PY=$(torch_python "${COST_PYTHON:-}")
export PYTHONUNBUFFERED=1
TRACE_ARGS=${COST_TRACE_ARGS---no-gpu-samples}
IFS=';' read -r -a VARIANTS <<< "${COST_VARIANTS:--}"
R="$OUT/side-rounds.jsonl"
: > "$R"

# Each side is a group of COPIES copies under one launcher process, which a
# round's capture traces with --pid (the launcher and its children, as a
# multi-process job is traced). Copy i of A and copy i of B form a pair: with
# COPIES pairs the round's log ratio is the mean over the pairs, so one
# round's noise shrinks by up to sqrt(COPIES) while each traced process still
# carries exactly what one traced process carries.
declare -A PID
NAMES=()
for name in A B; do
  for i in $(seq "$COPIES"); do NAMES+=("$name$i"); done
done
for n in "${NAMES[@]}"; do mkfifo "$OUT/$n.fifo"; done
# The CPU list for copy i of a side: the i-th entry of a comma-separated
# COST_PIN_* list when there are several copies, the whole list when one.
pin_of() { # list, i
  local list=$1 i=$2
  if [ -z "$list" ] || [ "$COPIES" = 1 ]; then echo "$list"; return; fi
  echo "$list" | cut -d, -f"$i"
}
start_group() { # name, pins
  local name=$1 pins=$2
  (
    for i in $(seq "$COPIES"); do
      local run=("$PY" "$S/cost/dataloader_epochs.py" "$SAMPLES")
      local pin
      pin=$(pin_of "$pins" "$i")
      [ -n "$pin" ] && run=(taskset -c "$pin" "${run[@]}")
      "${run[@]}" < "$OUT/$name$i.fifo" > "$OUT/side-$name$i.jsonl" 2> "$OUT/side-$name$i.err" &
    done
    wait
  ) &
  PID[$name]=$!
}
start_group A "${COST_PIN_A:-}"
start_group B "${COST_PIN_B:-}"
declare -A FD
for n in "${NAMES[@]}"; do
  exec {fd}> "$OUT/$n.fifo"
  FD[$n]=$fd
done
for n in "${NAMES[@]}"; do
  for _ in $(seq 1800); do grep -q ready "$OUT/side-$n.jsonl" 2>/dev/null && break; sleep 0.1; done
  grep -q ready "$OUT/side-$n.jsonl" || { echo "copy $n did not start: $(tail -3 "$OUT/side-$n.err")" >&2; exit 3; }
done
EPOCHS=0
# Every copy runs one epoch at the same time; returns when all printed it.
both_epochs() {
  for n in "${NAMES[@]}"; do echo go >&"${FD[$n]}"; done
  EPOCHS=$((EPOCHS + 1))
  for _ in $(seq 12000); do
    local done_all=1
    for n in "${NAMES[@]}"; do
      [ "$(grep -c '"epoch"' "$OUT/side-$n.jsonl")" -ge "$EPOCHS" ] || { done_all=0; break; }
    done
    [ "$done_all" = 1 ] && return 0
    sleep 0.05
  done
  echo "round epochs did not finish" >&2
  exit 3
}
# The last epoch of every copy of a side, as a JSON list.
side_epochs() { # name
  local parts=()
  for i in $(seq "$COPIES"); do parts+=("$(grep '"epoch"' "$OUT/side-$1$i.jsonl" | tail -1)"); done
  local IFS=,
  echo "[${parts[*]}]"
}
# One warm-up round, not counted (first-epoch allocations).
both_epochs
PLAN=()
for v in "${VARIANTS[@]}"; do PLAN+=("A|$v" "B|$v"); done
PLAN+=("-|")
for r in $(seq "$ROUNDS"); do
  if [ "$UNTIL" -gt 0 ] && [ "$(date +%s)" -ge "$UNTIL" ]; then
    echo "stopped after $((r - 1)) rounds (COST_UNTIL)" >&2
    break
  fi
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
  a=$(side_epochs A)
  b=$(side_epochs B)
  printf '{"round": %d, "traced": "%s", "variant": "%s", "ok": %d, "ingero_ticks": %s, "A": %s, "B": %s}\n' \
    "$r" "$target" "${v:--}" "$ok" "${cpu:-0}" "$a" "$b" >> "$R"
  rm -f "$OUT/side-$r.db" "$OUT/side-$r.db-wal" "$OUT/side-$r.db-shm"
done
for n in "${NAMES[@]}"; do fd=${FD[$n]}; exec {fd}>&-; done
wait "${PID[A]}" "${PID[B]}"
"$PY" "$S/cost/side_by_side_summary.py" "$R" | tee "$OUT/side-summary.txt"
for n in "${NAMES[@]}"; do rm -f "$OUT/$n.fifo"; done
