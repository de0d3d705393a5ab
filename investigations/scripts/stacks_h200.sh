#!/usr/bin/env bash
# Stack samples on the H200 (issue 15). Run as root from the repository root:
#   investigations/scripts/stacks_h200.sh OUT_DIR [INGERO_BINARY]
# 1. Records the three constructed hot spots of stacks_h200.py under
#    `ingero trace --stack-hz 99` into OUT/stacks-CASE.db, their construction
#    lines in OUT/stacks-results.jsonl, and per case OUT/stacks-CASE.txt: the
#    sampling notes, sample counts, and the heaviest folded stacks of the GPU
#    thread (Python and native; all, on-CPU host wait, in CUDA, blocked).
# 2. Overhead: seed_benchmark.py --samples 1000000 --only direct,dataloader,
#    untraced, traced at 99 Hz and traced at 999 Hz, alternating REPS times
#    (env STACKS_REPS, default 3), each run's phase timings on one line in
#    OUT/stacks-overhead.txt, then the median ratios against untraced.
. "$(dirname "$0")/device_setup.sh"
PY=$(torch_python "${STACKS_PYTHON:-}")
export PYTHONUNBUFFERED=1
REPS=${STACKS_REPS:-3}
SECS=${STACKS_SECONDS:-8}
RES="$OUT/stacks-results.jsonl"
: > "$RES"
# sql DB QUERY: rows of a read-only query, tab-separated (no sqlite3 CLI needed).
sql() { "$PY" -c 'import sqlite3, sys
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
for r in c.execute(sys.argv[2]): print("\t".join(map(str, r)))' "$1" "$2"; }

for c in getitem_transform item_sync python_busy_loop; do
  rm -f "$OUT/stacks-$c.db"
  timeout $(( SECS * 4 + 120 )) "$ING" trace --quiet --json --stack-hz 99 --db "$OUT/stacks-$c.db" \
    -- "$PY" "$S/stacks_h200.py" --case "$c" --seconds "$SECS" \
    > "$OUT/stacks-$c.out" 2> "$OUT/stacks-$c.err"
  rc=$?
  grep -h '^{"stacks_case"' "$OUT/stacks-$c.out" | sed "s/^{/{\"trace_rc\": $rc, /" >> "$RES"
  tid=$(grep -h '^{"stacks_case"' "$OUT/stacks-$c.out" | sed -n 's/.*"gpu_tid": \([0-9]*\).*/\1/p')
  {
    echo "== $c (trace rc $rc, GPU thread ${tid:-?})"
    sql "$OUT/stacks-$c.db" "SELECT kind, hz, note FROM stack_sources" 2>&1
    sql "$OUT/stacks-$c.db" "SELECT kind, SUM(count), SUM(stored) FROM stack_counts GROUP BY kind" 2>&1
    for cat in "" on_cpu in_cuda blocked; do
      for set in python native; do
        "$ING" export --format folded --db "$OUT/stacks-$c.db" --stacks $set \
          ${tid:+--tid $tid} ${cat:+--category $cat} > "$OUT/stacks-$c-$set${cat:+-$cat}.folded" 2>&1
        echo "-- $set ${cat:-all}: top 5 folded stacks"
        sort -k2 -n -r -t' ' "$OUT/stacks-$c-$set${cat:+-$cat}.folded" | head -5 | cut -c1-400
      done
    done
  } > "$OUT/stacks-$c.txt" 2>&1
  echo "== $c rc=$rc $(ls -la "$OUT/stacks-$c.db" 2>/dev/null | awk '{print $5}') bytes; $(tail -1 "$OUT/stacks-$c.err")"
done

B=(--samples 1000000 --only direct,dataloader)
OV="$OUT/stacks-overhead.txt"
: > "$OV"
phases() { grep -E '^(direct|dataloader) ' "$1" | awk '{printf "%s %s ", $1, $2}'; }
for i in $(seq "$REPS"); do
  t0=$(date +%s%N); "$PY" "$S/seed_benchmark.py" "${B[@]}" > "$OUT/ov-plain.out" 2>&1; t1=$(date +%s%N)
  echo "plain $i wall_ms $(( (t1 - t0) / 1000000 )) $(phases "$OUT/ov-plain.out")" | tee -a "$OV"
  for hz in 99 999; do
    rm -f "$OUT/ov-$hz.db"
    t0=$(date +%s%N)
    "$ING" trace --quiet --json --stack-hz "$hz" --db "$OUT/ov-$hz.db" \
      -- "$PY" "$S/seed_benchmark.py" "${B[@]}" > "$OUT/ov-$hz.out" 2> "$OUT/ov-$hz.err"
    t1=$(date +%s%N)
    echo "hz$hz $i wall_ms $(( (t1 - t0) / 1000000 )) $(phases "$OUT/ov-$hz.out")" | tee -a "$OV"
  done
  # The last run of each rate is kept for its stack counts and sampler cost.
  [ "$i" = "$REPS" ] || rm -f "$OUT"/ov-*.db
done
"$PY" - "$OV" <<'EOF' | tee -a "$OV"
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 4 or f[2] != "wall_ms":
        continue
    kv = dict(zip(f[4::2], f[5::2]))
    r = runs.setdefault(f[0], {"wall_ms": [], "direct": [], "dataloader": []})
    r["wall_ms"].append(float(f[3]))
    for k in ("direct", "dataloader"):
        if k in kv:
            r[k].append(float(kv[k]))
base = runs.get("plain")
for name in ("hz99", "hz999"):
    if not base or name not in runs:
        continue
    parts = []
    for k in ("wall_ms", "direct", "dataloader"):
        b, t = base[k], runs[name][k]
        if b and t:
            parts.append(f"{k} {statistics.median(t) / statistics.median(b):.3f}x")
    print(f"ratio {name} vs untraced (medians of {len(runs[name]['wall_ms'])}): " + ", ".join(parts))
EOF
for hz in 99 999; do
  sql "$OUT/ov-$hz.db" "SELECT $hz, kind, hz, note FROM stack_sources" >> "$OV" 2>&1
done
