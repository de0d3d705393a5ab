# Sourced by the *_h200.sh scripts: arguments OUT_DIR [INGERO_BINARY], the
# scripts folder, the output folder, and tracefs mounted for the capture.
set -u
OUT=${1:?output directory}
ING=${2:-./ingero}
S=investigations/scripts
mkdir -p "$OUT"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
# The interpreter with PyTorch: $1 when given (a script's *_PYTHON
# setting), else the device's torch environment, else python3.
torch_python() {
  local p=${1:-/opt/torch/.venv/bin/python}
  if [ -x "$p" ]; then echo "$p"; else echo python3; fi
}
