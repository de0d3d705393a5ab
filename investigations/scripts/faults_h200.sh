#!/usr/bin/env bash
# Capture faults next to a real PyTorch job on a GPU host: the job killed
# inside a CUDA synchronize, a synchronize still running when the capture
# stops, and a ring buffer too small for a launch storm. Prints the capture
# summary and, from each database, the unfinished calls and the losses.
#   investigations/scripts/faults_h200.sh OUT_DIR [INGERO_BINARY]
. "$(dirname "$0")/device_setup.sh"
show() {
  python3 - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
q = lambda s: c.execute(s).fetchall()
print("  unfinished calls:", q("SELECT o.name, c.ret, ROUND(c.dur_ns / 1e6, 1) AS ms FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id WHERE c.ret < 0"))
print("  capture_losses:", q("SELECT source, SUM(lost) FROM capture_losses GROUP BY source"))
print("  cuda rows:", q("SELECT COUNT(*) FROM cuda_calls")[0][0], " exits:", q("SELECT pid, arg FROM host_events WHERE kind = 6"))
PY
}
echo "== killed inside torch.cuda.synchronize (SIGKILL 2 s into it)"
"$ING" trace --quiet --db "$OUT/killed.db" -- python3 $S/faults_workload.py kill 2>&1 | tail -4
show "$OUT/killed.db"
"$ING" explain --db "$OUT/killed.db" | grep -i "never returned"
echo "== capture stops (4 s) while the job is inside torch.cuda.synchronize"
"$ING" trace --quiet --duration 6s --db "$OUT/open.db" -- python3 $S/faults_workload.py hang 2>&1 | tail -4
show "$OUT/open.db"
sleep 8
echo "== launch storm into a 4 KiB ring buffer"
"$ING" trace --quiet --ring-size 4K --db "$OUT/ring.db" -- python3 $S/faults_workload.py storm 2>&1 | tail -4
show "$OUT/ring.db"
"$ING" explain --db "$OUT/ring.db" | grep -i "lost"
echo "== the same storm with the default 16 MiB ring"
"$ING" trace --quiet --db "$OUT/ring16.db" -- python3 $S/faults_workload.py storm 2>&1 | tail -3
show "$OUT/ring16.db"
