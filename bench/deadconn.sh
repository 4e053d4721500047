#!/usr/bin/env bash
# Dead TCP connections on the real kernel (bench/deadconn.py), in a private lab of 4 workers:
# the stock setting on workers 1 -> 2 while every other setting runs on 3 -> 4.
#
#   bench/deadconn.sh            5 runs per setting and kind, each on a power-off of its own (stock: one
#                                power-off for its 5 connections, about 16 minutes; the rest about 45 minutes)
#   bench/deadconn.sh --quick    smoke: one connection each, fast and aggressive only
#
# Writes docs/benchmarks/raw/dead-connections.json (or $BENCH_OUT/raw) and the page
# docs/benchmarks/dead-connections.md. The private lab is taken down at the end, also on failure or Ctrl-C.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
python=$repo/.venv/bin/python
out=${BENCH_OUT:-$repo/docs/benchmarks}
export NODEGUARD_BENCH_NAME=${NODEGUARD_DEADCONN_LAB:-ngbtcp} NODEGUARD_LAB_WORKERS=4
args=(--runs 5 --independent)
[ "${1:-}" = "--quick" ] && args=(--runs 1 --settings fast aggressive)

trap 'bench/isolated-lab.sh down >/dev/null 2>&1 || true' EXIT INT TERM
mkdir -p "$out/raw"
bench/isolated-lab.sh up
bench/isolated-lab.sh run "$python" bench/deadconn.py "${args[@]}" --out "$out/raw/dead-connections.json"
"$python" bench/deadconn.py --page "$out/raw/dead-connections.json" > "$out/dead-connections.md"
