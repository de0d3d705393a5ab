#!/usr/bin/env bash
# Every capture-cost figure of the launch loop, the untraced neighbour, the
# seed benchmark's DataLoader phase, and start and stop, from one device
# session, in parts that each fit one device call (under 10 minutes):
#   part A: paired launch-loop phases (pair and entry floors, the default
#           capture, one record per launch, --launch-sample 16), then the
#           same loop as an untraced neighbour of a traced copy;
#   part B: DataLoader epochs traced and untraced in one process (the
#           default capture, --no-python-stacks and --stack-hz 0 in turn,
#           three epochs each; COST_VARIANTS to choose others), then start
#           and stop;
#   part C: the DataLoader epoch side by side (dataloader_side_by_side.sh):
#           two copies at once, one traced per round or neither, for a
#           cost the wander of one epoch cannot hide as easily (63 rounds:
#           9 per side and variant; on the H100 the copies' epochs wandered
#           apart, so expect intervals of several percent);
#   part H: the host-event costs (host_events.sh: system calls beside a
#           capture, fresh pages of a traced process and the
#           page-allocation program's time per run) for INGERO_BINARY and,
#           where COST_BASE names one, an earlier build beside it; needs the
#           stand-in in COST_STANDIN (workload, libcudart.so.13, libcuda.so.1).
# Run as root from the repository root:
#   investigations/scripts/cost/cost_h200.sh A|B|C|H OUT_DIR INGERO_BINARY PROBE_FLOOR_BINARY
set -u
PART=${1:?part A, B, C or H}
OUT=${2:?output directory}
ING=${3:?ingero binary}
FLOOR=${4:?probe_floor binary}
D=$(dirname "$0")
mkdir -p "$OUT"
case $PART in
  A)
    COST_PHASES="floor entry_floor traced traced_rows1 traced_launch16" \
      bash "$D/paired_cost.sh" "$OUT/loop" "$ING" "$FLOOR" 3 5
    COST_NEIGHBOUR=1 COST_PHASES="traced" \
      bash "$D/paired_cost.sh" "$OUT/neighbour" "$ING" "$FLOOR" 3 5
    echo "== launch loop"; tail -n 12 "$OUT/loop/paired-summary.txt"
    echo "== untraced neighbour of a traced copy"; grep -E "median ratio" "$OUT/neighbour/paired-summary.txt"
    cat "$OUT/neighbour/paired-code-bytes.jsonl"
    ;;
  B)
    COST_VARIANTS=${COST_VARIANTS:-"-;--no-python-stacks;--stack-hz 0"} \
      bash "$D/dataloader_cost.sh" "$OUT/dataloader" "$ING" 9 1000000
    bash "$D/start_stop.sh" "$OUT/startstop" "$ING" 5
    ;;
  C)
    COST_VARIANTS=${COST_VARIANTS:-"-;--no-python-stacks;--stack-hz 0"} \
      bash "$D/dataloader_side_by_side.sh" "$OUT/side" "$ING" "${COST_ROUNDS:-63}" 1000000
    ;;
  H)
    # shellcheck disable=SC2086
    bash "$D/host_events.sh" "$OUT/host" "${COST_STANDIN:?stand-in directory}" ${COST_BASE:-} "$ING"
    ;;
  *) echo "part A, B, C or H" >&2; exit 2 ;;
esac
