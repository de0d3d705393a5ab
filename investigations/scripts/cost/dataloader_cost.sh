#!/usr/bin/env bash
# Capture cost on the seed benchmark's DataLoader phase, inside one process
# (separate processes of it differ by 30% from run to run on the H200).
# dataloader_epochs.py builds the data and the model once and runs one
# DataLoader epoch per "go"; epochs alternate untraced and traced
# (`ingero trace --pid`, attached before the epoch starts and stopped after
# it ends), PAIRS times, with an untraced epoch at each end.
#
# Three measures:
#  - each traced epoch's time against the mean of the untraced epochs on
#    either side (ratio);
#  - the job's added system time per traced epoch (its CPU time from
#    os.times(), all threads and reaped children), against the untraced
#    epochs on either side: the capture's kernel-side work charged to the
#    job, steadier than the wall time, which wanders by several percent;
#  - an upper bound of the work the capture adds on the job's CPUs: the
#    run time of every ingero BPF program during the traced epochs (kernel
#    BPF statistics, on for the traced epochs only), plus each uprobe hit's
#    trap at the entry-probe floor measured on this machine
#    (COST_TRAP_NS, default 500 ns). All of it is counted as if it lay on
#    the epoch's critical path, which it does not where it ran on other
#    CPUs; ingero's own user-space time is given apart (other CPUs).
#
# Run as root from the repository root:
#   investigations/scripts/cost/dataloader_cost.sh OUT_DIR INGERO_BINARY [PAIRS] [SAMPLES]
# COST_TRACE_ARGS: extra trace options for the traced epochs (e.g. --launch-sample 16).
# COST_VARIANTS: several captures to compare in the one process, separated by
#   ';' (e.g. "-;--no-python-stacks;--stack-hz 0", where "-" is the default
#   capture); traced epoch i uses variant i modulo their number, so PAIRS
#   should be a multiple of it. The summary gives each variant apart, with
#   the main thread's run and wait times and the machine's steal time, which
#   tell CPU contention, slower own code and the hypervisor apart.
. "$(dirname "$0")/../device_setup.sh"
PAIRS=${3:-6}
SAMPLES=${4:-1000000}
PY=$(torch_python "${COST_PYTHON:-}")
export PYTHONUNBUFFERED=1
E="$OUT/dataloader-epochs.jsonl"
B="$OUT/dataloader-bpf.txt"
: > "$B"
mkfifo "$OUT/dl.fifo"
"$PY" "$S/cost/dataloader_epochs.py" "$SAMPLES" < "$OUT/dl.fifo" > "$E" 2> "$OUT/dataloader.err" &
P=$!
exec 3> "$OUT/dl.fifo"
for _ in $(seq 1200); do grep -q ready "$E" 2>/dev/null && break; sleep 0.1; done
n=0
epoch() { # run one epoch, wait for its line
  echo go >&3
  n=$((n + 1))
  for _ in $(seq 3000); do [ "$(grep -c '"epoch"' "$E")" -ge "$n" ] && return; sleep 0.05; done
  echo "epoch $n did not finish" >&2; exit 3
}
STATS=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
IFS=';' read -r -a VARIANTS <<< "${COST_VARIANTS:--}"
epoch; echo "untraced" >> "$OUT/dataloader-kinds.txt"
for i in $(seq "$PAIRS"); do
  v=${VARIANTS[$(((i - 1) % ${#VARIANTS[@]}))]}
  [ "$v" = "-" ] && v=""
  echo "${v:--}" >> "$OUT/dataloader-variants.txt"
  echo 1 > /proc/sys/kernel/bpf_stats_enabled
  # shellcheck disable=SC2086
  "$ING" trace --quiet --no-gpu-samples ${COST_TRACE_ARGS:-} $v --pid "$P" --duration 600s --db "$OUT/dl-$i.db" \
    > "$OUT/dl-trace-$i.out" 2> "$OUT/dl-trace-$i.err" &
  T=$!
  # Attached once the capture has its programs loaded and its links made.
  sleep 2
  before=$(for f in /proc/$T/fdinfo/*; do grep -q '^prog_tag' "$f" 2>/dev/null && tr '\n' ' ' < "$f" && echo; done)
  epoch; echo "traced" >> "$OUT/dataloader-kinds.txt"
  after=$(for f in /proc/$T/fdinfo/*; do grep -q '^prog_tag' "$f" 2>/dev/null && tr '\n' ' ' < "$f" && echo; done)
  cpu=$(sed 's/^.*) //' /proc/$T/stat | awk '{print $12 + $13}')
  kill -INT "$T"; wait "$T"
  echo "$STATS" > /proc/sys/kernel/bpf_stats_enabled
  { echo "pair $i ingero_cpu_ticks ${cpu:-0}"; echo "$before" | sed 's/^/before /'; echo "$after" | sed 's/^/after /'; } >> "$B"
  epoch; echo "untraced" >> "$OUT/dataloader-kinds.txt"
done
exec 3>&-
wait "$P"
"$PY" - "$E" "$OUT/dataloader-kinds.txt" "$B" "${COST_TRAP_NS:-500}" "$(getconf CLK_TCK)" "$OUT/dataloader-variants.txt" <<'PY' | tee "$OUT/dataloader-summary.txt"
import json, re, statistics, sys
epochs = [json.loads(l) for l in open(sys.argv[1]) if '"epoch"' in l]
kinds = open(sys.argv[2]).read().split()
trap_ns, tck = float(sys.argv[4]), int(sys.argv[5])
variants = iter(open(sys.argv[6]).read().splitlines())
for e, k in zip(epochs, kinds):
    e["kind"] = k
    e["variant"] = next(variants, "-") if k == "traced" else ""
print("epochs (s):", " ".join(f"{e['kind'][0]}{e['seconds']:.3f}" for e in epochs))
# Each traced epoch against the untraced epochs on either side: the wall-time
# ratio, and (where the epochs carry the job's CPU time) the added system and
# user time as shares of those epochs' wall time. The capture's kernel-side
# work on the job lands in its system time.
has_cpu = all("system_s" in e for e in epochs)
ratios, added = [], []
for i, e in enumerate(epochs):
    if e["kind"] != "traced":
        continue
    n = [epochs[j] for j in (i - 1, i + 1)]
    wall_u = statistics.mean(x["seconds"] for x in n)
    ratios.append(e["seconds"] / wall_u)
    if has_cpu:
        sys_u = statistics.mean(x["system_s"] for x in n)
        usr_u = statistics.mean(x["user_s"] for x in n)
        added.append(((e["system_s"] - sys_u) / wall_u, (e["user_s"] - usr_u) / wall_u))
print("traced/untraced per pair:", " ".join(f"{r:.4f}" for r in ratios))
print(f"median ratio {statistics.median(ratios):.4f}, mean {statistics.mean(ratios):.4f} over {len(ratios)} pairs")
if has_cpu:
    print("job CPU per epoch (user/system s):", " ".join(f"{e['kind'][0]}{e['user_s']:.2f}/{e['system_s']:.2f}" for e in epochs))
    print("added system time per traced epoch, % of the untraced epoch:", " ".join(f"{a[0] * 100:.2f}" for a in added))
    print("added user time per traced epoch, % of the untraced epoch:", " ".join(f"{a[1] * 100:.2f}" for a in added))
    print(f"added system time: median {statistics.median(a[0] for a in added) * 100:.2f}%, "
          f"mean {statistics.mean(a[0] for a in added) * 100:.2f}% of the epoch")
# BPF statistics: the difference over each traced epoch.
pairs, cur = [], None
for line in open(sys.argv[3]):
    if line.startswith("pair "):
        cur = {"cpu_ticks": int(line.split()[3]), "before": {}, "after": {}}
        pairs.append(cur)
        continue
    side, _, rest = line.partition(" ")
    f = dict(re.findall(r"(\w+):\s+(\S+)", rest))
    if "run_cnt" in f and cur is not None:  # programs (link fds name a program too)
        cur[side][f["prog_id"]] = (f.get("prog_type", "?"), int(f.get("run_time_ns", 0)), int(f.get("run_cnt", 0)))
traced = [e for e in epochs if e["kind"] == "traced"]
for p, e in zip(pairs, traced):
    run_ns = runs = uprobe_runs = 0
    for pid, (typ, t1, c1) in p["after"].items():
        t0, c0 = p["before"].get(pid, (typ, 0, 0))[1:]
        run_ns += t1 - t0
        runs += c1 - c0
    # uprobe programs: kprobe type (uprobes load as BPF_PROG_TYPE_KPROBE).
    for pid, (typ, t1, c1) in p["after"].items():
        if typ in ("2", "kprobe"):
            uprobe_runs += c1 - p["before"].get(pid, (typ, 0, 0))[2]
    bound = run_ns + uprobe_runs * trap_ns
    print(f"traced epoch {e['epoch']}: {e['seconds']:.3f} s; BPF programs {runs} runs, {run_ns / 1e6:.1f} ms; "
          f"uprobe runs {uprobe_runs} (x {trap_ns:.0f} ns trap = {uprobe_runs * trap_ns / 1e6:.1f} ms); "
          f"bound {bound / 1e6:.1f} ms = {bound / (e['seconds'] * 1e9) * 100:.2f}% of the epoch; "
          f"ingero user+system {p['cpu_ticks'] / tck * 1e3:.0f} ms over the capture (other CPUs)")
# Per capture variant, each traced epoch against the mean of its untraced
# neighbours: the wall ratio; the main thread's added user time, time on a
# CPU and time waiting for one (as % of the untraced epoch), its added
# involuntary switches and migrations; the machine's added steal and
# interrupt time (CPU seconds, all CPUs).
if all("main" in e and "host" in e for e in epochs):
    by = {}
    for i, e in enumerate(epochs):
        if e["kind"] != "traced":
            continue
        n = [epochs[j] for j in (i - 1, i + 1)]
        def added(f):
            return f(e) - statistics.mean(f(x) for x in n)
        wall = statistics.mean(x["seconds"] for x in n)
        by.setdefault(e["variant"], []).append({
            "ratio": e["seconds"] / wall,
            "user": added(lambda x: x["main"]["user_ticks"] / tck) / wall * 100,
            "run": added(lambda x: x["main"]["run_ns"] / 1e9) / wall * 100,
            "wait": added(lambda x: x["main"]["wait_ns"] / 1e9) / wall * 100,
            "invol": added(lambda x: x["main"]["involuntary"]),
            "migr": added(lambda x: x["main"]["migrations"]),
            "steal": added(lambda x: x["host"].get("steal", 0) / tck),
            "irq": added(lambda x: (x["host"].get("irq", 0) + x["host"].get("softirq", 0)) / tck),
        })
    for v, rows in by.items():
        def med(k):
            return statistics.median(r[k] for r in rows)
        each = " ".join(f"{r['ratio']:.3f}" for r in rows)
        print(f"variant {v!r}, {len(rows)} traced epochs, medians: ratio {med('ratio'):.4f} (each: {each}); "
              f"main thread added, % of the untraced epoch: user {med('user'):+.2f}, on CPU {med('run'):+.2f}, "
              f"waiting for a CPU {med('wait'):+.2f}; involuntary switches {med('invol'):+.0f}, "
              f"migrations {med('migr'):+.0f}; machine added steal {med('steal'):+.3f} CPU-s, "
              f"irq+softirq {med('irq'):+.3f} CPU-s")
PY
rm -f "$OUT"/dl-*.db "$OUT/dl.fifo"
