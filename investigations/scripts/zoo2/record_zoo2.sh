#!/usr/bin/env bash
# Records the cases of zoo2.py (causes of GPU idleness rebuilt from public
# reports) under `ingero trace` on a GPU host, one capture per case, and packs
# the databases for the trip back. Run as root from the repository root:
#   investigations/scripts/zoo2/record_zoo2.sh OUT_DIR [INGERO_BINARY] [CASE...]
# Default: every case, in the order below (the likeliest to run first).
# Environment: ZOO2_SECONDS (steady phase, default 6), ZOO2_BUDGET_S (default
# 420: once spent, the remaining cases are skipped), ZOO2_PYTHON, ZOO2_IO_DIR
# (where cases write their files; default the current directory),
# ZOO2_KEEP_FULL_MB (databases above it are shrunk, default 20).
# Each case's result line lands in OUT_DIR/zoo2-results.jsonl with "record"
# and "trace_rc" added; what comes back: that file, zoo2-logs.tar.gz and the
# databases as zoo2-dbs.tar.xz.NN parts of at most 15 MiB (8 files at most in
# all, so the parts are held to 6).
. "$(dirname "$0")/../device_setup.sh"
shift 2 2>/dev/null || shift $#
ALL="gc_pauses subprocess_per_step checkpoint_every_step stdout_backpressure lock_contention
     queue_prefetch_starved mask_indexing_sync cpu_side_augment small_file_reads affinity_one_core
     empty_cache_every_step tensor_from_list_of_arrays pinned_alloc_per_step mmap_dataset_faults
     ema_on_cpu tokenize_in_loop cudnn_benchmark_dynamic_shapes thread_oversubscription"
CASES=${*:-$ALL}
PY=$(torch_python "${ZOO2_PYTHON:-}")
export PYTHONUNBUFFERED=1
Z=$S/zoo2/zoo2.py
SECS=${ZOO2_SECONDS:-6}
BUDGET=${ZOO2_BUDGET_S:-420}
T0=$(date +%s)
RES="$OUT/zoo2-results.jsonl"
RUNLOG="$OUT/zoo2-run.log"
log() { echo "== [$(( $(date +%s) - T0 ))s] $*" | tee -a "$RUNLOG"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$BUDGET" ] || { log "time budget ($BUDGET s) spent, skipping: $*"; return 1; }; }

# trace_case NAME: one traced case into OUT/zoo2-NAME.db and its line into RES.
trace_case() {
  local name=$1 rc line
  rm -f "$OUT/zoo2-$name.db"
  timeout $(( ${SECS%.*} * 4 + 90 )) "$ING" trace --quiet --json --db "$OUT/zoo2-$name.db" \
    -- "$PY" "$Z" --case "$name" --seconds "$SECS" > "$OUT/zoo2-$name.out" 2> "$OUT/zoo2-$name.err"
  rc=$?
  line=$(grep -h '^{"zoo_case"' "$OUT/zoo2-$name.out" | tail -1)
  if [ -n "$line" ]; then
    echo "$line" | sed "s/^{/{\"record\": \"$name\", \"trace_rc\": $rc, /" >> "$RES"
  else
    echo "{\"record\": \"$name\", \"trace_rc\": $rc, \"zoo_case\": \"$name\", \"ok\": false, \"error\": \"no result line\"}" >> "$RES"
  fi
  log "$name rc=$rc db=$(stat -c %s "$OUT/zoo2-$name.db" 2>/dev/null || echo none) bytes;" \
      "$(echo "$line" | grep -o '"ok": [a-z]*')" \
      "$(echo "$line" | grep -o '"cause_share_of_wall": [0-9.]*')" \
      "$(echo "$line" | grep -o '"error": "[^"]*' | cut -c1-300)"
  grep -v '^{"zoo_case"' "$OUT/zoo2-$name.out" | tr -d '\n' | cut -c1-400 | tee -a "$RUNLOG"; echo
  tail -3 "$OUT/zoo2-$name.err" | tee -a "$RUNLOG"
}

log "machine"
{ nproc; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  "$PY" -c "import torch,sys;print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  "$ING" check 2>&1 | head -40; } 2>&1 | tee -a "$RUNLOG"
log "cases: $(echo $CASES | wc -w), steady ${SECS} s each, budget ${BUDGET} s"
for c in $CASES; do
  left "$c" || { echo "{\"record\": \"$c\", \"skipped\": \"time budget spent\"}" >> "$RES"; continue; }
  log "case $c"
  trace_case "$c"
done

log "pack"
cd "$OUT" && ls -la | tee -a "$RUNLOG"
if command -v xz >/dev/null; then z="xz -T0 -6"; ext=xz; else z="gzip -6"; ext=gz; fi
# Databases above KEEP MiB are reduced to what `--sample N` would have kept
# (../zoo/shrink_db.py: aggregates, activity spans, NVML and stack tables stay
# whole); if the parts still number more than 6, again with tighter settings.
pack() {
  local keep=$1 n=$2 f
  for f in zoo2-*.db; do
    [ -f "$f" ] || continue
    if [ "$(stat -c %s "$f")" -gt $(( keep * 1024 * 1024 )) ]; then
      "$PY" "$OLDPWD/$S/zoo/shrink_db.py" "$f" "$f.tmp" "$n" >&2 && mv "$f.tmp" "$f" \
        && log "shrunk $f to --sample $n: $(stat -c %s "$f") bytes" >&2
    fi
  done
  rm -f zoo2-dbs.tar.$ext.*
  tar -cf - zoo2-*.db 2>/dev/null | $z | split -b 15M -d - "zoo2-dbs.tar.$ext."
  ls zoo2-dbs.tar.$ext.* 2>/dev/null | wc -l   # the only thing pack writes to stdout
}
parts=$(pack "${ZOO2_KEEP_FULL_MB:-20}" 50)
[ "$parts" -gt 6 ] && parts=$(pack 6 20)
[ "$parts" -gt 6 ] && parts=$(pack 2 5)
[ "$parts" -gt 6 ] && log "WARNING: $parts database parts; only 8 files in all come back"
log "packed: $parts database part(s)"
tar -czf zoo2-logs.tar.gz zoo2-*.out zoo2-*.err zoo2-run.log 2>/dev/null
rm -f zoo2-*.db zoo2-*.out zoo2-*.err zoo2-run.log
ls -la
