#!/usr/bin/env bash
# A world-size-1 NCCL job traced on the GPU host: the exported nccl* names of
# the libnccl.so.2 PyTorch loads (for the catalogue test), then the job
# untraced and traced, and SQL on the capture: NCCL calls by function,
# communicators, the process's rank.
#   investigations/scripts/nccl/nccl_h200.sh OUT_DIR [INGERO_BINARY]
source "$(dirname "$0")/../device_setup.sh"
PY=$(torch_python "${PYTHON:-}")
NCCL=$("$PY" -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so.2'))" 2>/dev/null)
echo "nccl $NCCL"
nm -D --defined-only "$NCCL" | awk '{print $NF}' | grep -E '^nccl' | sort -u > "$OUT/libnccl.so.2.txt"
wc -l "$OUT/libnccl.so.2.txt"
for s in ncclAllReduce ncclCommInitRankConfig ncclCommInitRank; do
  a=$(nm -D --defined-only "$NCCL" | awk -v s=$s '$3==s{print $1}' | head -1)
  [ -n "$a" ] && echo "$s $(objdump -d --start-address=0x$a --stop-address=$((16#$a + 8)) "$NCCL" | awk -F'\t' 'NF>2{print $3}' | head -2 | tr '\n' ';')"
done
echo "== untraced"; "$PY" "$S/nccl/ws1_collectives.py"
echo "== traced"
"$ING" trace --db "$OUT/nccl-ws1.db" -- "$PY" "$S/nccl/ws1_collectives.py" > "$OUT/trace.log" 2>&1
echo "trace rc=$?"; tail -5 "$OUT/trace.log"
Q() { "$PY" -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); cur = c.execute(sys.argv[2])
print(" | ".join(d[0] for d in cur.description))
for r in cur.fetchall()[:40]: print(" | ".join(str(v) for v in r))' "$OUT/nccl-ws1.db" "$1" 2>&1; }
Q "SELECT o.name, COUNT(*) AS calls, SUM(n.bytes) AS bytes, MIN(n.seq), MAX(n.seq), SUM(n.dur_ns)/1000 AS us FROM nccl_calls n JOIN cuda_ops o ON o.id = n.op_id GROUP BY o.name ORDER BY calls DESC"
Q "SELECT pid, printf('%x', comm) AS comm, comm_key, comm_rank, nranks, op_id, init_dur_ns/1000 AS init_us, destroy_ts_ns > 0 AS destroyed FROM nccl_comms"
Q "SELECT pid, comm, rank, local_rank, world_size FROM processes WHERE rank >= 0 OR world_size >= 0"
Q "SELECT o.name, COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id WHERE o.api = 'nccl' GROUP BY 1"
Q "SELECT o.name, n.count, n.datatype, n.red_op, n.peer, n.bytes FROM nccl_calls n JOIN cuda_ops o ON o.id = n.op_id GROUP BY o.name"
"$ING" explain --db "$OUT/nccl-ws1.db" > "$OUT/explain.txt" 2>&1; head -60 "$OUT/explain.txt"
