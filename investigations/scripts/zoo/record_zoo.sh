#!/usr/bin/env bash
# Records the constructed workloads of zoo.py under `ingero trace` on a GPU
# host, measures the capture's cost against untraced runs, and packs the
# databases for the trip back. Run as root from the repository root:
#   investigations/scripts/zoo/record_zoo.sh OUT_DIR [INGERO_BINARY] [PHASE...]
# PHASE: core (the four reference cases, two of them also with --sample 50),
#        short (the tiny-kernel case, full, 2 s),
#        overhead (untraced / traced without GPU samples / traced, alternating),
#        rest (the other cases, traced), smoke (the other cases untraced, 1 s).
# Default: core overhead smoke. Every case prints one JSON line of its
# construction figures; they land in OUT_DIR/zoo-results.jsonl.
. "$(dirname "$0")/../device_setup.sh"
shift 2 2>/dev/null || shift $#
PHASES=${*:-core overhead smoke}
PY=$(torch_python "${ZOO_PYTHON:-}")
export PYTHONUNBUFFERED=1
Z=$S/zoo/zoo.py
BUDGET=${ZOO_BUDGET_S:-540}
T0=$(date +%s)
log() { echo "== [$(( $(date +%s) - T0 ))s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$BUDGET" ] || { log "time budget spent, skipping: $*"; return 1; }; }
RES="$OUT/zoo-results.jsonl"
REST="slow_workers sync_in_loop pageable_copies pinned_copies_overlap io_bound cpu_contention
      compile_stall cuda_graphs sleep_idle mixed_phases gil_contention one_off_block
      page_alloc_storm idle_server hf_generate"

# trace NAME SECONDS EXTRA_TRACE_ARGS -- zoo args: one traced case into OUT/zoo-NAME.db.
trace_case() {
  local name=$1 secs=$2; shift 2
  local extra=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do extra+=("$1"); shift; done
  shift
  left "$name" || return 0
  rm -f "$OUT/zoo-$name.db"
  timeout $(( ${secs%.*} * 4 + 90 )) "$ING" trace --quiet --json "${extra[@]}" --db "$OUT/zoo-$name.db" \
    -- "$PY" "$Z" --seconds "$secs" "$@" > "$OUT/zoo-$name.out" 2> "$OUT/zoo-$name.err"
  local rc=$?
  grep -h '^{"zoo_case"' "$OUT/zoo-$name.out" | sed "s/^{/{\"record\": \"$name\", \"trace_rc\": $rc, /" >> "$RES"
  log "$name rc=$rc $(ls -la "$OUT/zoo-$name.db" 2>/dev/null | awk '{print $5}') bytes; $(grep -v '^{"zoo_case"' "$OUT/zoo-$name.out" | tr -d '\n' | cut -c1-600)"
  grep -h '"ok": false' "$OUT/zoo-$name.out" | cut -c1-800
  tail -3 "$OUT/zoo-$name.err"
}

log "machine"
nproc; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
"$PY" -c "import torch,sys;print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
"$ING" check 2>&1 | head -40

for phase in $PHASES; do case $phase in
core)
  log "core: four reference cases, 6 s steady each"
  trace_case gpu_bound 6 -- --case gpu_bound
  trace_case launch_bound 6 -- --case launch_bound
  trace_case alloc_churn 6 -- --case alloc_churn
  trace_case dataloader_starved 6 -- --case dataloader_starved
  log "core: the same under --sample 50"
  trace_case launch_bound-s50 6 --sample 50 -- --case launch_bound
  trace_case dataloader_starved-s50 6 --sample 50 -- --case dataloader_starved
  ;;
overhead)
  # Fixed step counts, so the steady phase's wall time is the measure; the
  # zoo line gives it (steady.wall_s), free of import and start-up time.
  for rep in 1 2 3; do
    for w in "gpu_bound --steps 300" "launch_bound --steps 4000"; do
      set -- $w; c=$1; shift
      left "overhead $c $rep" || break 2
      echo "{\"overhead\": \"untraced\", \"rep\": $rep, \"line\": $("$PY" "$Z" --case "$c" "$@" 2>/dev/null | grep '^{"zoo_case"' || echo null)}" >> "$RES"
      "$ING" trace --quiet --no-gpu-samples --db "$OUT/ovh.db" -- "$PY" "$Z" --case "$c" "$@" 2>/dev/null \
        | grep '^{"zoo_case"' | sed "s/^/{\"overhead\": \"traced-no-gpu-samples\", \"rep\": $rep, \"line\": /; s/\$/}/" >> "$RES"
      rm -f "$OUT/ovh.db"
      "$ING" trace --quiet --json --db "$OUT/ovh.db" -- "$PY" "$Z" --case "$c" "$@" 2>/dev/null > "$OUT/ovh.out"
      grep '^{"zoo_case"' "$OUT/ovh.out" | sed "s/^/{\"overhead\": \"traced\", \"rep\": $rep, \"line\": /; s/\$/}/" >> "$RES"
      grep -v '^{"zoo_case"' "$OUT/ovh.out" | tr -d '\n' | sed "s/^/{\"overhead_summary\": \"$c\", \"rep\": $rep, \"summary\": /; s/\$/}\n/" >> "$RES"
      rm -f "$OUT/ovh.db" "$OUT/ovh.out"
      log "overhead $c rep $rep: $(tail -3 "$RES" | grep -o '"steady": {"wall_s": [0-9.]*' | tr '\n' ' ')"
    done
  done
  ;;
rest)
  for c in $REST; do
    trace_case "$c" 5 -- --case "$c"
  done
  ;;
short)
  # A full (unsampled) tiny-kernel capture small enough to keep: 2 s steady.
  trace_case launch_bound 2 -- --case launch_bound
  ;;
smoke)
  for c in $REST; do
    left "smoke $c" || break
    line=$(timeout 120 "$PY" "$Z" --case "$c" --seconds 1 2> "$OUT/smoke-$c.err" | grep '^{"zoo_case"')
    echo "{\"smoke\": \"$c\", \"line\": ${line:-null}}" >> "$RES"
    log "smoke $c: $(echo "$line" | grep -o '"ok": [a-z]*') $(echo "$line" | grep -o '"error": "[^"]*' | cut -c1-300)"
    [ -n "$line" ] && echo "$line" | grep -q '"ok": true' || tail -5 "$OUT/smoke-$c.err"
  done
  ;;
esac; done

log "pack"
cd "$OUT" && ls -la
# At most 64 MiB come back in all: databases above ZOO_KEEP_FULL_MB (default
# 20) are reduced to what --sample 50 would have stored (shrink_db.py; the
# activity spans, totals, NVML and stack tables stay whole).
for f in zoo-*.db; do
  [ -f "$f" ] || continue
  if [ "$(stat -c %s "$f")" -gt $(( ${ZOO_KEEP_FULL_MB:-20} * 1024 * 1024 )) ]; then
    "$PY" "$OLDPWD/$S/zoo/shrink_db.py" "$f" "${f%.db}-s50.db" 50 && rm -f "$f"
  fi
done
# At most 8 files of 16 MiB come back: the databases go in xz tarballs split
# below that size; logs and results stay as they are.
if command -v xz >/dev/null; then z="xz -T0 -6"; ext=xz; else z="gzip -6"; ext=gz; fi
tar -cf - zoo-*.db 2>/dev/null | $z | split -b 15M -d - "zoo-dbs.tar.$ext."
tar -czf zoo-logs.tar.gz zoo-*.out zoo-*.err smoke-*.err 2>/dev/null
rm -f zoo-*.db zoo-*.out zoo-*.err smoke-*.err
ls -la
