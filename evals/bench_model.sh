#!/usr/bin/env bash
# Model-mode bench: a real small tool-calling model investigates six cases
# through `ingero mcp`, at a small local context window. Minutes per case on
# 2 CPU cores, so it is a bench, not part of .ci/run.
#
#   evals/bench_model.sh MODEL.gguf [OUT_DIR]
#
# Environment: LOCALMODEL (folder with serve.py, toolproxy.py and the chat
# template; default ../shared/localmodel), N_CTX (context window, default
# 8192), INGERO_BIN (default target/release/ingero), CASES (default the six
# below), PORT (model server; the tool-call proxy listens on PORT+1), EVAL_ARGS
# (more run.py arguments, e.g. "--timeout 900 --case-budget 2400" on a busy machine).
# Writes OUT_DIR/model.json (every transcript) and prints the results table.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:?path to the GGUF model (see ../shared/localmodel/README.md)}
OUT=${2:-target/bench-model}
LM=${LOCALMODEL:-../shared/localmodel}
PORT=${PORT:-8090}
BIN=${INGERO_BIN:-target/release/ingero}
CASES=${CASES:-"seed-why-idle seed-culprit h200-seed-why-idle h200-pageable-why zoo-sync_in_loop-s50 zoo-launch_bound-s50"}
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "no ingero binary at $BIN: cargo build --release -p ingero" >&2; exit 2; }

N_CTX=${N_CTX:-8192} python3 "$LM/serve.py" "$MODEL" "$PORT" "$LM/qwen25-tools-fixed.jinja" > "$OUT/model-server.log" 2>&1 &
SERVER=$!
python3 "$LM/toolproxy.py" "http://127.0.0.1:$PORT" $((PORT + 1)) > "$OUT/proxy.log" 2>&1 &
PROXY=$!
trap 'kill $SERVER $PROXY 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$((PORT + 1))/v1/models" >/dev/null 2>&1 && break
  sleep 1
done

args=()
for c in $CASES; do args+=(--case "$c"); done
INGERO_EVAL_OPENAI_BASE_URL="http://127.0.0.1:$((PORT + 1))/v1" INGERO_EVAL_MODEL=local \
  .venv/bin/python evals/run.py --bin "$BIN" --mode model "${args[@]}" ${EVAL_ARGS:-} --json "$OUT/model.json"
