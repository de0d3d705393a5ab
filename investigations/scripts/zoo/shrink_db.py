"""Reduces a full ingero capture to what `ingero trace --sample N` would have stored.

Raw CUDA calls: the first N per (second, pid, op) plus every call of at least
1 ms (the trace's always-kept tail). Host events: every context switch of a
thread that made CUDA calls (the recorder never samples those), the first N
per (second, pid, kind) of the rest. Aggregates keep their exact counts and
get the `stored` figure of the rows kept; the activity spans, NVML samples and
stack tables stay as recorded. The copy is written to OUT (the input is not
touched), then vacuumed.

Usage: python3 shrink_db.py IN.db OUT.db [N]
"""
import shutil
import sqlite3
import sys

SEC = 1_000_000_000
KEEP_NS = 1_000_000


def main():
    src, dst = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    shutil.copyfile(src, dst)
    c = sqlite3.connect(dst)
    c.executescript(f"""
        DELETE FROM cuda_calls WHERE dur_ns < {KEEP_NS} AND id NOT IN (
            SELECT id FROM (
                SELECT id, ROW_NUMBER() OVER (
                    PARTITION BY ts_ns / {SEC}, pid, op_id ORDER BY ts_ns) AS k
                FROM cuda_calls) WHERE k <= {n});
        CREATE TEMP TABLE cuda_threads AS SELECT DISTINCT pid, tid FROM cuda_calls;
        DELETE FROM host_events WHERE NOT (kind = 1 AND (pid, tid) IN (SELECT pid, tid FROM cuda_threads))
          AND id NOT IN (
            SELECT id FROM (
                SELECT id, ROW_NUMBER() OVER (
                    PARTITION BY ts_ns / {SEC}, pid, kind ORDER BY ts_ns) AS k
                FROM host_events) WHERE k <= {n});
        UPDATE aggregates SET stored = COALESCE((
            SELECT COUNT(*) FROM cuda_calls c WHERE c.pid = aggregates.pid AND c.op_id = aggregates.code
              AND c.ts_ns >= aggregates.bucket_ns AND c.ts_ns < aggregates.bucket_ns + {SEC}), 0)
          WHERE source = 1;
        UPDATE aggregates SET stored = COALESCE((
            SELECT COUNT(*) FROM host_events h WHERE h.pid = aggregates.pid AND h.kind = aggregates.code
              AND h.ts_ns >= aggregates.bucket_ns AND h.ts_ns < aggregates.bucket_ns + {SEC}), 0)
          WHERE source = 2;
    """)
    c.commit()
    c.execute("VACUUM")
    c.close()


if __name__ == "__main__":
    main()
