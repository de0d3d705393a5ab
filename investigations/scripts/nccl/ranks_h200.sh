#!/usr/bin/env bash
# Two stand-in ranks (tests/standin nccl_rank, built on the build machine and
# carried in STANDIN_DIR) traced by two captures on the GPU host, the second
# with its clock shifted by SKEW_NS and its rank slowed by DELAY_MS of CPU
# work (or SLEEP_MS asleep) before each all-reduce; then ingero merge and
# explain. Prints the offset recovered against the one injected, and SQL on
# the merged file for the wait the slow rank imposed.
#   investigations/scripts/nccl/ranks_h200.sh OUT_DIR INGERO_BINARY STANDIN_DIR
source "$(dirname "$0")/../device_setup.sh"
SD=${3:?stand-in directory}
SKEW_NS=${SKEW_NS:-37512345}
ITERS=${ITERS:-50}
for mode in delay sleep; do
  id="h200-$mode-$$"
  slow=(--delay-ms 20); [ "$mode" = sleep ] && slow=(--sleep-ms 20)
  rm -f "$OUT/$mode-r0.db" "$OUT/$mode-r1.db" "$OUT/$mode-merged.db"
  RANK=0 WORLD_SIZE=2 "$ING" trace --quiet --db "$OUT/$mode-r0.db" -- "$SD/nccl_rank" --rank 0 --world 2 --id "$id" --iters "$ITERS" --wait-ms 600 &
  RANK=1 WORLD_SIZE=2 INGERO_CLOCK_SKEW_NS=$SKEW_NS "$ING" trace --quiet --db "$OUT/$mode-r1.db" -- "$SD/nccl_rank" --rank 1 --world 2 --id "$id" --iters "$ITERS" --wait-ms 600 "${slow[@]}"
  wait
  "$ING" merge "$OUT/$mode-merged.db" "$OUT/$mode-r0.db" "$OUT/$mode-r1.db" --node node-a --node node-b
  echo "== $mode: injected $SKEW_NS ns"
  python3 - "$OUT/$mode-merged.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute("SELECT node, clock_offset_ns, offset_spread_ns, matched FROM merge_sources"):
    print("merge_sources", r)
print("wait imposed by rank 1 (SQL)", c.execute(
    "SELECT SUM(b.ts_ns - a.ts_ns), COUNT(*) FROM nccl_calls a JOIN nccl_calls b ON b.seq = a.seq "
    "AND b.op_id = a.op_id WHERE a.rank = 0 AND b.rank = 1 AND a.op_id = 201 AND b.ts_ns > a.ts_ns").fetchone())
PY
  "$ING" explain --db "$OUT/$mode-merged.db" | sed -n '/^Ranks/,/^GPU starvation/p'
done
