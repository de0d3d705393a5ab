#!/usr/bin/env bash
# Multi-uprobe links against one link per function, next to a real PyTorch
# job: the same launch storm traced both ways, then the time until the
# kernel has released every probe (the detach holder process is gone), and
# the calls each database holds per function.
#   investigations/scripts/uprobe_links_h200.sh OUT_DIR [INGERO_BINARY]
. "$(dirname "$0")/device_setup.sh"
"$ING" check 2>&1 | grep "bpf programs"
echo "untraced: $(python3 $S/faults_workload.py storm)"
for mode in multi per-function; do
  flag=""
  [ "$mode" = per-function ] && flag="--per-function-uprobes"
  echo "== $mode"
  "$ING" trace --quiet $flag --db "$OUT/links-$mode.db" -- python3 $S/faults_workload.py storm 2>&1 | grep -E "storm done|lost|dropped" | head -3
  t0=$(date +%s.%N)
  while pgrep -x ingero-control >/dev/null; do sleep 0.02; done
  t1=$(date +%s.%N)
  echo "  probes released $(python3 -c "print(f'{$t1 - $t0:.2f}')") s after the capture ended"
  python3 - "$OUT/links-$mode.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = c.execute("SELECT o.name, COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id GROUP BY o.name ORDER BY 2 DESC").fetchall()
print("  calls:", rows)
PY
done
