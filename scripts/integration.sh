#!/usr/bin/env bash
# Integration tests on the failover lab: bring the lab up, run every test under tests/integration
# (a failure does not stop the others), and ALWAYS take the lab down again, even when a test
# fails or the run is interrupted, then check that nothing was left behind.
#
#   scripts/integration.sh [pytest args...]      e.g. scripts/integration.sh -k controlplane
#   NODEGUARD_LAB_KEEP=1 scripts/integration.sh  keep the lab up afterwards (for debugging)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
lab_sh=$repo/lab/scripts/lab.sh

leftovers() {
  podman ps -a --format '{{.Names}}' | grep -E '^ng-(cp[0-9]+|worker[0-9]+|csi-attacher)$' || true
  if podman network exists nodeguard-lab; then echo "network nodeguard-lab"; fi
  # The lab's own BMC processes, Redfish and each node's ipmi_sim (all name files under lab/.state/bmc);
  # tests run private ones elsewhere.
  pgrep -af "$repo/lab/.state/bmc" || true
}

finish() {
  local status=$?
  trap - EXIT INT TERM
  if [ "${NODEGUARD_LAB_KEEP:-0}" = 1 ]; then
    echo "integration: NODEGUARD_LAB_KEEP=1, the lab stays up (lab/scripts/lab.sh down removes it)"
    exit "$status"
  fi
  "$lab_sh" down || status=1
  local left
  left=$(leftovers)
  if [ -n "$left" ]; then
    echo "integration: error: the lab left things behind:" >&2
    echo "$left" >&2
    status=1
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

"$lab_sh" up
"$repo/.venv/bin/pytest" -v -rfEs --durations=15 tests/integration "$@"
