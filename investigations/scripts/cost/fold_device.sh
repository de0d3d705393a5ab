#!/usr/bin/env bash
# What a capture writes and costs on real CUDA loops, with call folding (the
# default) and with one raw row per call (--call-rows 0): for each class of
# fold_loops.py (copy, sync, event), the loop untraced, then traced each way
# for SECONDS; per run the loop's calls per second, the database's size and
# its raw rows and counted calls (fold-<class>-<setting>.json lines in
# OUT/fold-device.jsonl).
#
# Run as root from the repository root:
#   investigations/scripts/cost/fold_device.sh OUT_DIR INGERO_BINARY [SECONDS]
. "$(dirname "$0")/../device_setup.sh"
SECONDS_EACH=${3:-12}
PY=$(torch_python "${COST_PYTHON:-}")
R="$OUT/fold-device.jsonl"
: > "$R"
for class in copy sync event; do
  line=$("$PY" "$S/cost/fold_loops.py" "$class" "$SECONDS_EACH" | tail -1)
  echo "{\"setting\": \"untraced\", \"loop\": $line}" >> "$R"
  for rows in 8 0; do
    db="$OUT/fold-$class-$rows.db"
    rm -f "$db" "$db-wal" "$db-shm"
    out="$OUT/fold-$class-$rows.out"
    "$ING" trace --quiet --stack-hz 0 --call-rows "$rows" --db "$db" -- \
      "$PY" "$S/cost/fold_loops.py" "$class" "$SECONDS_EACH" > "$out" 2> "$OUT/fold-$class-$rows.err"
    line=$(tail -1 "$out")
    size=$(stat -c %s "$db")
    q() { "$PY" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$db" "$1"; }
    raw=$(q "SELECT COUNT(*) FROM cuda_calls")
    counted=$(q "SELECT COALESCE(SUM(count),0) FROM aggregates WHERE source = 1")
    span=$(q "SELECT (stopped_ns - started_ns) / 1e9 FROM sessions")
    echo "{\"setting\": \"call_rows_$rows\", \"db_bytes\": $size, \"raw_rows\": $raw, \"calls_counted\": $counted, \"capture_s\": $span, \"loop\": $line}" >> "$R"
    rm -f "$db" "$db-wal" "$db-shm"
  done
done
cat "$R"
