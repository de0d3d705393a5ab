# Sourced by the *_h200.sh scripts: arguments OUT_DIR [INGERO_BINARY], the
# scripts folder, the output folder, and tracefs mounted for the capture.
set -u
OUT=${1:?output directory}
ING=${2:-./ingero}
S=investigations/scripts
mkdir -p "$OUT"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
