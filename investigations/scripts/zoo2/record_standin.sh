#!/usr/bin/env bash
# Records the zoo2 causes that need no real tensor work on a machine without
# a GPU: the cause is the real thing (garbage collector, subprocess, pipe,
# lock, queue, files, memory map), the step's GPU work goes to the stand-in
# CUDA runtime of tests/standin through standin_torch (a stand-in for the few
# PyTorch calls the GPU work makes), and `ingero trace` probes that runtime
# with real uprobes, tracepoints and stacks. Run as root from the repository root:
#   investigations/scripts/zoo2/record_standin.sh OUT_DIR INGERO [CASE...]
# The databases are named like the GPU recordings (zoo2-NAME.db), so
# grade_zoo2.py grades them the same way.
set -u
OUT=${1:?output directory}; ING=${2:?ingero binary}; shift 2
S=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/lib"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
make -s -C "$S/../../../tests/standin" OUT="$OUT/lib"
CASES=${*:-gc_pauses subprocess_per_step stdout_backpressure lock_contention queue_prefetch_starved small_file_reads mmap_dataset_faults}
export PYTHONPATH="$S/standin_torch" INGERO_STANDIN_LIB_DIR="$OUT/lib" INGERO_STANDIN_SYNC_US=${STANDIN_SYNC_US:-20000}
export ZOO2_IO_DIR=${ZOO2_IO_DIR:-$OUT}
for c in $CASES; do
  extra=()
  # No nvidia-smi here: the monitoring command is a short sleep instead.
  [ "$c" = subprocess_per_step ] && extra=(--set "cmd=sleep 0.03")
  rm -f "$OUT/zoo2-$c.db"
  timeout 120 "$ING" trace --quiet --json --db "$OUT/zoo2-$c.db" \
    --lib "$OUT/lib/libcudart.so.13" --lib "$OUT/lib/libcuda.so.1" \
    -- python3 "$S/zoo2.py" --case "$c" --seconds "${ZOO2_SECONDS:-4}" "${extra[@]}" \
    > "$OUT/zoo2-$c.out" 2> "$OUT/zoo2-$c.err"
  echo "== $c rc=$? $(grep -h '^{"zoo_case"' "$OUT/zoo2-$c.out" | grep -o '"ok": [a-z]*\|"cause_share_of_wall": [0-9.]*\|"error": "[^"]*' | tr '\n' ' ' | cut -c1-300)"
  grep -h '^{"zoo_case"' "$OUT/zoo2-$c.out" | sed "s/^{/{\"record\": \"$c\", /" >> "$OUT/zoo2-results.jsonl"
done
