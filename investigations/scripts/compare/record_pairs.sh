#!/usr/bin/env bash
# Records each pair of pairs.py (a cause, then the same job with its fix) under
# `ingero trace` on a GPU host, runs `ingero compare` on each pair and on one
# capture against itself, and packs the databases for the trip back. Run as root
# from the repository root:
#   investigations/scripts/compare/record_pairs.sh OUT_DIR [INGERO_BINARY] [PAIR...]
# Environment: PAIRS_SECONDS (steady phase, default 5), PAIRS_PYTHON.
# Back: pairs-results.jsonl (one line per run, "record" and "trace_rc" added),
# pairs-compare.txt (the comparisons), pairs-dbs.tar.xz.NN (at most 15 MiB each).
. "$(dirname "$0")/../device_setup.sh"
shift 2 2>/dev/null || shift $#
PAIRS=${*:-dataloader copies item graphs}
PY=$(torch_python "${PAIRS_PYTHON:-}")
export PYTHONUNBUFFERED=1
P=$S/compare/pairs.py
SECS=${PAIRS_SECONDS:-5}
T0=$(date +%s)
RES="$OUT/pairs-results.jsonl"
CMP="$OUT/pairs-compare.txt"
log() { echo "== [$(( $(date +%s) - T0 ))s] $*"; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for p in $PAIRS; do
  for side in cause fix; do
    name=pair-$p-$side
    rm -f "$OUT/$name.db"
    timeout $(( SECS * 4 + 90 )) "$ING" trace --quiet --json --db "$OUT/$name.db" \
      -- "$PY" "$P" --pair "$p" --side "$side" --seconds "$SECS" > "$OUT/$name.out" 2> "$OUT/$name.err"
    rc=$?
    grep -h '^{"pair"' "$OUT/$name.out" | tail -1 | sed "s/^{/{\"record\": \"$name\", \"trace_rc\": $rc, /" >> "$RES"
    log "$name rc=$rc $(stat -c %s "$OUT/$name.db" 2>/dev/null) bytes $(grep -o '"steps": [0-9]*' "$OUT/$name.out" | tail -1) $(grep -o '"error": "[^"]*' "$OUT/$name.out" | cut -c1-300)"
    tail -2 "$OUT/$name.err"
  done
  { echo "### $p: cause -> fix"; "$ING" compare "$OUT/pair-$p-cause.db" "$OUT/pair-$p-fix.db" 2>&1 | head -60; echo; } >> "$CMP"
  head -1 <(grep -A1 "### $p" "$CMP" | tail -1)
done
first=$(echo $PAIRS | cut -d' ' -f1)
{ echo "### $first: cause against itself"; "$ING" compare "$OUT/pair-$first-cause.db" "$OUT/pair-$first-cause.db" 2>&1 | head -3; } >> "$CMP"

log "pack"
cd "$OUT" || exit 1
if command -v xz >/dev/null; then z="xz -T0 -6"; ext=xz; else z="gzip -6"; ext=gz; fi
for f in pair-*.db; do
  if [ "$(stat -c %s "$f")" -gt $(( 40 * 1024 * 1024 )) ]; then
    "$PY" "$OLDPWD/$S/zoo/shrink_db.py" "$f" "$f.tmp" 50 && mv "$f.tmp" "$f" && log "shrunk $f: $(stat -c %s "$f") bytes"
  fi
done
tar -cf - pair-*.db | $z | split -b 15M -d - "pairs-dbs.tar.$ext."
rm -f pair-*.db pair-*.out pair-*.err
ls -la
