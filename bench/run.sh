#!/usr/bin/env bash
# make bench: every measurement of issue 5, then results.json, the plots and the page.
#
#   bench/run.sh            full run (about 2 hours on 2 cores)
#   bench/run.sh --quick    smoke: 100 nodes, short windows, one run per profile and kind
#
# Timelines run on a private copy of the lab (bench/isolated-lab.sh), cost and incident overhead
# on scale mode (lab/scale). Raw measurements go to docs/benchmarks/raw/ (or $BENCH_OUT/raw).
# Everything started here is stopped on exit, also on failure or Ctrl-C.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
python=$repo/.venv/bin/python
out=${BENCH_OUT:-$repo/docs/benchmarks}
quick=false
[ "${1:-}" = "--quick" ] && quick=true

cleanup() {
  lab/scale/scale.sh down >/dev/null 2>&1 || true
  bench/isolated-lab.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

mkdir -p "$out/raw"
echo "bench: load before start: $(cut -d' ' -f1-3 /proc/loadavg)"

if $quick; then
  cost_args=(--nodes 100 --window 20)
  timeline_fast=(--runs 1)
  timeline_slow=(--runs 1)
  incident_args=(--nodes 100 --pods 1000 --on-node 110)
else
  cost_args=(--nodes 100 1000 --window 60)
  timeline_fast=(--runs 5)
  # kubernetes-default and seed-001 wait the default 300s toleration before the Deployment pod
  # moves: fewer runs keep the whole benchmark within about two hours.
  timeline_slow=(--runs 2)
  incident_args=(--nodes 1000 --pods 30000 --on-node 110 --profile kubernetes-default)
fi

echo "bench: control-plane cost (scale mode)"
"$python" bench/cost.py "${cost_args[@]}" --out "$out/raw/cost.json"

echo "bench: incident overhead (scale mode)"
"$python" bench/incident.py "${incident_args[@]}" --out "$out/raw/incident.json"
if ! $quick; then  # the same node in a cluster ten times smaller: the count must not follow the cluster
  "$python" bench/incident.py --nodes 100 --pods 3000 --on-node 110 --out "$out/raw/incident.json"
fi

echo "bench: failover timelines (private lab)"
bench/isolated-lab.sh up
bench/isolated-lab.sh run "$python" bench/timeline.py --profiles fast aggressive balanced \
  "${timeline_fast[@]}" --out "$out/raw/timelines.json"
bench/isolated-lab.sh run "$python" bench/timeline.py --profiles kubernetes-default seed-001 \
  "${timeline_slow[@]}" --out "$out/raw/timelines.json"

echo "bench: results, plots, page"
"$python" bench/report.py --out "$out"
