#!/usr/bin/env bash
# What the host-event probes cost on this machine, for builds compared in
# one run: ns per system call (getppid) of an untraced process beside a
# capture of another (an idle process), and ns per fresh 4 KiB page of a
# traced process, with the page-allocation program's own time per run (the
# kernel's BPF statistics, on for this script only). The workload is the
# stand-in's (`workload --syscall-bench N` / `--page-bench N`, pinned to
# one CPU, ingero to the others).
# Run as root from the repository root:
#   investigations/scripts/cost/host_events.sh OUT_DIR STANDIN_DIR INGERO_BINARY...
. "$(dirname "$0")/../device_setup.sh"
W=${2:?stand-in directory (workload, libcudart.so.13, libcuda.so.1)}/workload
shift 2
ROUNDS=${HOST_ROUNDS:-3}
NCPU=$(nproc)
PIN=(taskset -c 1)
REST=(taskset -c "0,2-$((NCPU - 1))")
[ "$NCPU" -lt 3 ] && REST=(taskset -c 0)
export INGERO_STANDIN_US=0
# One workload run released at once: its ns per unit.
bench() { echo go | "${PIN[@]}" "$W" --stdin "$@"; }
# A capture of an idle process, in place: sets CAP (ingero) and IDLE.
capture_idle() { # ingero
  sleep 600 & IDLE=$!
  INGERO_LOG=ingero_probes=debug "${REST[@]}" "$1" trace --quiet --no-gpu-samples --pid $IDLE \
    --db "$OUT/idle.db" > /dev/null 2> "$OUT/idle.err" &
  CAP=$!
  for _ in $(seq 200); do grep -q "command released" "$OUT/idle.err" && break; sleep 0.05; done
}
end_capture() { kill -INT $CAP; wait $CAP; kill $IDLE; wait $IDLE 2>/dev/null; rm -f "$OUT"/idle.db*; }
echo "system call of an untraced process, ns (getppid, $ROUNDS rounds):"
for r in $(seq "$ROUNDS"); do
  line="  untraced $(bench --syscall-bench 3000000)"
  for ing in "$@"; do
    capture_idle "$ing"
    line="$line | beside a capture ($(basename "$ing")) $(bench --syscall-bench 3000000)"
    end_capture
  done
  echo "$line"
done
echo "fresh page of a traced process, ns per page, and the page-allocation program's ns per run:"
echo 1 > /proc/sys/kernel/bpf_stats_enabled
mkfifo "$OUT/w.fifo"
for r in $(seq "$ROUNDS"); do
  line="  untraced $(bench --page-bench 1000000)"
  for ing in "$@"; do
    "${PIN[@]}" "$W" --stdin --page-bench 1500000 < "$OUT/w.fifo" > "$OUT/w.out" &
    P=$!
    exec 3> "$OUT/w.fifo"
    INGERO_LOG=ingero_probes=debug "${REST[@]}" "$ing" trace --quiet --no-gpu-samples --pid $P \
      --db "$OUT/p.db" > /dev/null 2> "$OUT/p.err" &
    T=$!
    for _ in $(seq 200); do grep -q "command released" "$OUT/p.err" && break; sleep 0.05; done
    echo go >&3
    sleep 1.5
    # The page program: the tracing program with the most runs.
    prog=$(for f in /proc/[0-9]*/fdinfo/*; do
      grep -qs "prog_tag" "$f" && awk '/run_time_ns/{t=$2}/run_cnt/{c=$2}END{if(c>0)printf "%d %.1f\n", c, t/c}' "$f" 2>/dev/null
    done | sort -n | tail -1 | awk '{print $2}')
    wait $P
    exec 3>&-
    kill -INT $T 2>/dev/null; wait $T; rm -f "$OUT"/p.db*
    line="$line | traced ($(basename "$ing")) $(cat "$OUT/w.out") (program ${prog:-?} ns/run)"
  done
  echo "$line"
done
echo 0 > /proc/sys/kernel/bpf_stats_enabled
rm -f "$OUT/w.fifo"
