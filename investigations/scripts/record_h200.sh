#!/usr/bin/env bash
# Records the investigations in investigations/ on a GPU host, and measures
# tracing overhead. Run as root from the repository root:
#   investigations/scripts/record_h200.sh OUT_DIR [INGERO_BINARY]
. "$(dirname "$0")/device_setup.sh"
log() { echo "== $*"; }

log "machine"
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch,sys;print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
uname -r

log "1. seed benchmark under trace (direct, DataLoader, DataLoader num_workers=4)"
timeout 240 "$ING" trace --quiet --sample 50 --db "$OUT/pytorch-dataloader-starvation-h200.db" \
  -- python3 $S/seed_benchmark.py > "$OUT/seed.log" 2>&1; tail -25 "$OUT/seed.log"

log "2. pageable vs pinned host-to-device copies under trace"
timeout 90 "$ING" trace --quiet --sample 50 --db "$OUT/pageable-vs-pinned-h200.db" \
  -- python3 $S/pageable_pinned.py --mib 256 --rounds 40 > "$OUT/pageable.log" 2>&1; tail -3 "$OUT/pageable.log"

log "3. small-kernel launch storm with a busy loop on every core, under trace"
timeout 120 "$ING" trace --quiet --sample 50 --db "$OUT/launch-storm-cpu-contention-h200.db" \
  -- python3 $S/launch_storm.py --iters 200000 --step 100 --hogs -1 --hog-seconds 40 > "$OUT/storm.log" 2>&1; tail -3 "$OUT/storm.log"

log "4. end-to-end overhead: reduced seed benchmark (1M samples), alternating untraced/traced"
for i in 1 2 3 4 5; do
  t0=$(date +%s%N); python3 $S/seed_benchmark.py --samples 1000000 --only direct,dataloader > "$OUT/ovh-plain-$i.txt" 2>&1; t1=$(date +%s%N)
  echo "plain $i wall_ms $(( (t1 - t0) / 1000000 )) $(tr '\n' ' ' < "$OUT/ovh-plain-$i.txt")"
  t0=$(date +%s%N); "$ING" trace --quiet --sample 50 --db "$OUT/ovh-$i.db" -- python3 $S/seed_benchmark.py --samples 1000000 --only direct,dataloader > "$OUT/ovh-traced-$i.txt" 2>/dev/null; t1=$(date +%s%N)
  echo "traced $i wall_ms $(( (t1 - t0) / 1000000 )) $(grep -E '^(direct|dataloader) ' "$OUT/ovh-traced-$i.txt" | tr '\n' ' ')"
  rm -f "$OUT/ovh-$i.db"
done

log "5. per-call cost of cudaLaunchKernel: 200k launches, untraced vs traced"
for i in 1 2 3; do
  echo "plain  $(python3 $S/launch_storm.py --iters 200000 --step 1000 2>&1 | tail -1)"
  echo "traced $("$ING" trace --quiet --db "$OUT/lc-$i.db" -- python3 $S/launch_storm.py --iters 200000 --step 1000 2>/dev/null | grep launches | tail -1)"
  rm -f "$OUT/lc-$i.db"
done
rm -f "$OUT"/ovh-*.txt
log "done"
ls -la "$OUT"
