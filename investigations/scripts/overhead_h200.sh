#!/usr/bin/env bash
# End-to-end tracing overhead on the full seed benchmark: untraced and traced
# runs alternate, REPS times each; prints wall times and the benchmark's own
# phase timings. Run as root from the repository root:
#   investigations/scripts/overhead_h200.sh REPS [INGERO_BINARY]
set -u
REPS=${1:-3}
ING=${2:-./ingero}
S=investigations/scripts
TMP=$(mktemp -d)
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
for i in $(seq "$REPS"); do
  t0=$(date +%s%N); python3 $S/seed_benchmark.py > "$TMP/plain.txt" 2>&1; t1=$(date +%s%N)
  echo "plain $i wall_ms $(( (t1 - t0) / 1000000 )) $(tr '\n' ' ' < "$TMP/plain.txt")"
  t0=$(date +%s%N); "$ING" trace --quiet --sample 50 --db "$TMP/t.db" -- python3 $S/seed_benchmark.py > "$TMP/traced.txt" 2>/dev/null; t1=$(date +%s%N)
  echo "traced $i wall_ms $(( (t1 - t0) / 1000000 )) $(grep -E '^(direct|dataloader|workers4) ' "$TMP/traced.txt" | tr '\n' ' ')"
  rm -f "$TMP/t.db"
done
rm -rf "$TMP"
